-- 0004: where a conversation was started (issue #29): the app whose Smart Picker opened it
-- ('talk', 'text', 'collectives', 'mail', 'picker'; src/origin.rs is the closed set), NULL for
-- one started on the Tamebi page. Set when the row is created, never changed.
ALTER TABLE conversations ADD COLUMN origin TEXT;
