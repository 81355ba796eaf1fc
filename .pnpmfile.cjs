// The manifest a packed package ships (pnpm pack, pnpm publish): what an app's install reads.
// Its development dependencies (the testkit, type packages, ...) and its build scripts
// concern only this workspace.
module.exports = {
  hooks: {
    beforePacking(pkg) {
      delete pkg.devDependencies
      delete pkg.scripts
      return pkg
    }
  }
}
