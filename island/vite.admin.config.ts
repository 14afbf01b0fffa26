// The admin settings bundle: a second build next to the island's, with fixed names too, because
// the Nextcloud app copies exactly `dist/tamebi-admin.js` and `dist/tamebi-admin.css`
// (nextcloud-app/build.sh). It runs after vite.config.ts and keeps that build's files.
import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

export default defineConfig({
  plugins: [vue()],
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    sourcemap: false,
    lib: {
      entry: 'src/admin/main.ts',
      name: 'TamebiAdmin',
      formats: ['iife'],
      fileName: () => 'tamebi-admin.js',
      cssFileName: 'tamebi-admin',
    },
  },
});
