-- 0006: a token that names the registry's state (issue #33, P9). Every instance caches the
-- registry's rows and reads only this one row per request to know whether its copy is still
-- the database's (store::postgres::registry). The token is changed by a trigger in the same
-- transaction as any write to either registry table, whichever code path writes (an admin's
-- change, a person's edit, an erasure), so a request that starts after a write was
-- acknowledged reads the new token. A random value, not a counter: a database restored from a
-- backup never comes back with a token an instance has already cached for other rows.
CREATE TABLE registry_version (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    token UUID NOT NULL
);
INSERT INTO registry_version (one, token) VALUES (TRUE, gen_random_uuid());

CREATE FUNCTION registry_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE registry_version SET token = gen_random_uuid();
    RETURN NULL;
END
$$;

CREATE TRIGGER registry_entries_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON registry_entries
    FOR EACH STATEMENT EXECUTE FUNCTION registry_changed();
CREATE TRIGGER personal_assistants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON personal_assistants
    FOR EACH STATEMENT EXECUTE FUNCTION registry_changed();
