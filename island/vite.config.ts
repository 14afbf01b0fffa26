// Builds the island as one script and one stylesheet with fixed names, because the
// Nextcloud app copies exactly `dist/tamebi-island.js` and `dist/tamebi-island.css`.
import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

export default defineConfig({
  plugins: [vue()],
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    lib: {
      entry: 'src/main.ts',
      name: 'TamebiIsland',
      formats: ['iife'],
      fileName: () => 'tamebi-island.js',
      cssFileName: 'tamebi-island',
    },
  },
  test: {
    include: ['test/**/*.test.ts', 'dev-host/**/*.test.mjs'],
    environment: 'node',
  },
});
