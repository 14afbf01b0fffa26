-- 0004: the registry managed inside Nextcloud (issue #30). `registry_entries` holds what an admin
-- registered in the admin page (MCP servers, assistants, the policy for personal assistants) as
-- validated JSON documents; `personal_assistants` holds what people built, each row its owner's
-- data (erased with the user). A shared one names the group it was proposed to; who is in that
-- group is never stored here (the app signs the caller's groups on each request).
CREATE TABLE registry_entries (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (kind, name)
);
CREATE TABLE personal_assistants (
    id TEXT PRIMARY KEY,
    uid TEXT NOT NULL,
    body TEXT NOT NULL,
    share_group TEXT,
    version BIGINT NOT NULL,
    approved_version BIGINT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX personal_assistants_uid ON personal_assistants (uid);
