-- 0002: one owner per conversation across instances (issue 15). A row is a lease: the
-- instance `owner` runs this conversation's turns until `expires_at`, which it renews while
-- its actor lives. Times come from the database clock, so instances' clocks never matter.
-- `turn_*` name the turn in flight, so whoever takes over after an expiry can mark that
-- turn's stored message interrupted.
CREATE TABLE conversation_leases (
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    turn_message_id TEXT,
    turn_request_id TEXT,
    PRIMARY KEY (uid, conversation_id)
);
