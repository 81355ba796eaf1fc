/** main.tsx's first import, so it runs before the other modules: the first page's API calls (early.ts). */
import { prefetchFirstPage } from "./early.ts"

prefetchFirstPage()
