-- 0001: chat, audit and memory: the same tables and columns as the SQLite files
-- (chat.db, audit.db, memory.db), so stored strings and queries read alike.

CREATE TABLE conversations (
    uid TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    -- The assistant the conversation was created with (set once, by its first user message).
    assistant TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (uid, id)
);
CREATE INDEX conversations_by_user ON conversations (uid, updated_at DESC);

CREATE TABLE messages (
    seq BIGSERIAL PRIMARY KEY,
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (uid, conversation_id, id),
    FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE
);

CREATE TABLE pending_approvals (
    approval_id TEXT PRIMARY KEY,
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_sha256 TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE
);
CREATE INDEX pending_approvals_by_conversation ON pending_approvals (uid, conversation_id);

CREATE TABLE summaries (
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    covers_count BIGINT NOT NULL,
    covers_until_id TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (uid, conversation_id, covers_count),
    FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE
);

-- The audit trail has no foreign key to chat: erasing a conversation never erases it.
CREATE TABLE audit (
    seq BIGSERIAL PRIMARY KEY,
    at_ms BIGINT NOT NULL,
    kind TEXT NOT NULL,
    uid TEXT NOT NULL,
    conversation_id TEXT,
    request_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    category TEXT NOT NULL,
    approval TEXT NOT NULL,
    arguments_sha256 TEXT,
    outcome TEXT NOT NULL,
    duration_ms BIGINT,
    detail TEXT
);
CREATE INDEX audit_by_user ON audit (uid, at_ms);

CREATE TABLE fingerprints (
    server TEXT NOT NULL,
    name TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    first_seen_ms BIGINT NOT NULL,
    last_changed_ms BIGINT NOT NULL,
    PRIMARY KEY (server, name)
);

CREATE TABLE facts (
    id BIGSERIAL PRIMARY KEY,
    uid TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    source_conversation TEXT
);
CREATE INDEX facts_by_user ON facts (uid, id);
