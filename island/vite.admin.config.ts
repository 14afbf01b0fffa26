// The admin settings bundle: the island's build (vite.config.ts) with another entry and fixed
// names too, because the Nextcloud app copies exactly `dist/tamebi-admin.js` and
// `dist/tamebi-admin.css` (nextcloud-app/build.sh). It runs after the island's build and keeps
// that build's files.
import { defineConfig, mergeConfig } from 'vite';
import island from './vite.config';

export default mergeConfig(
  island,
  defineConfig({
    build: {
      emptyOutDir: false,
      lib: {
        entry: 'src/admin/main.ts',
        name: 'TamebiAdmin',
        fileName: () => 'tamebi-admin.js',
        cssFileName: 'tamebi-admin',
      },
    },
  }),
);
