-- 0003: G1's replay guard shared by every instance (issue 15 follow-up). A row is a signed
-- request some instance accepted: the SHA-256 of its nonce (never the request itself) and the
-- unix second after which its signature can no longer verify. The primary key is what makes
-- exactly one instance accept a request; rows are pruned a while after they expire.
CREATE TABLE replay_nonces (
    digest BYTEA PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX replay_nonces_by_expiry ON replay_nonces (expires_at);

-- Lease rows now outlive their owner's release (it only expires them), so that an instance
-- that lost a conversation cannot write into it while the row names another instance
-- (store::lease, the fence: an owner check, see check_fence). Rows long expired are pruned
-- by expiry.
CREATE INDEX conversation_leases_by_expiry ON conversation_leases (expires_at);
