-- Schema version 3: raw kernels (issue 7). A candidate whose params_key
-- ends in "@<16 hex digits>" was rendered from a kernel that is not the
-- task's template: a --source baseline or an LLM answer. Its `sources` row
-- holds the *rendered* text (the #defines prepended), which cannot be
-- rendered again with other values; this table keeps the raw kernel under
-- the key in params_key, so that parameter mutations of such a candidate
-- re-render that kernel with their own #defines.
CREATE TABLE kernels (
    key            TEXT    PRIMARY KEY,                   -- first 16 hex digits of hash (as in params_key)
    hash           TEXT    NOT NULL,                      -- SHA-256 of text
    text           TEXT    NOT NULL,                      -- the raw kernel, no #defines prepended
    origin         TEXT    NOT NULL CHECK (origin IN ('source', 'llm')),
    llm_request_id INTEGER REFERENCES llm_requests(id),   -- the request whose answer it is (origin llm)
    created_at     TEXT    NOT NULL
);
