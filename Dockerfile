# inboxctl as a container image: built from the packed CLI (the same tarball that
# `pnpm pack` makes and packages/cli/test/package.test.ts installs), run as a non-root user,
# with the embedded data folder as a volume. Not built in CI here (no container runtime):
# see the README, Operating.
FROM node:24-bookworm-slim AS build
WORKDIR /src
RUN corepack enable
COPY . .
RUN pnpm install --frozen-lockfile \
 && cd packages/cli && pnpm pack --pack-destination /out

FROM node:24-bookworm-slim
COPY --from=build /out/ /tmp/pkg/
RUN npm install -g --no-audit --no-fund /tmp/pkg/*.tgz && rm -rf /tmp/pkg \
 && mkdir -p /data && chown node:node /data
USER node
ENV INBOX_HOST=0.0.0.0 INBOX_PORT=3000 INBOX_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:3000/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# SIGTERM (docker stop) drains requests and jobs, then exits 0; give it INBOX_SHUTDOWN_TIMEOUT
# and a little more: docker stop --time 30.
STOPSIGNAL SIGTERM
ENTRYPOINT ["inboxctl"]
CMD ["serve"]
