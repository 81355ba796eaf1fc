// Vite's types for what the bundle imports besides modules (app.css).
/// <reference types="vite/client" />
