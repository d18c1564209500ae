-- Schema version 2: LLM requests (issue 7) and the per-mode metrics of the
-- EvoEngineer paper. Every request is recorded, failed ones too. API keys
-- are never stored: there is deliberately no column for request headers.

CREATE TABLE llm_requests (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation    INTEGER,
    parent_id     INTEGER REFERENCES candidates(id),
    candidate_id  INTEGER REFERENCES candidates(id),  -- the child it produced, if any
    mode          TEXT    NOT NULL CHECK (mode IN ('free', 'insight', 'full')),
    provider      TEXT    NOT NULL,
    model         TEXT,
    url           TEXT,
    prompt        TEXT    NOT NULL,
    reply         TEXT,
    rationale     TEXT,
    input_tokens  INTEGER,
    output_tokens INTEGER,
    latency_ms    REAL,
    http_status   INTEGER,
    attempts      INTEGER,
    status        TEXT    NOT NULL,                   -- ok, http_error, timeout, bad_json, no_code, ...
    error         TEXT,
    created_at    TEXT    NOT NULL
);
CREATE INDEX llm_requests_run ON llm_requests(run_id);

ALTER TABLE candidates ADD COLUMN llm_request_id INTEGER REFERENCES llm_requests(id);
ALTER TABLE candidates ADD COLUMN rationale TEXT;

-- Per run and mode: requests, children, validity rate (compiled and passed
-- the gate), acceptance rate and best speedup.
CREATE VIEW llm_mode_stats AS
    SELECT r.run_id, r.mode,
           COUNT(*)                                             AS requests,
           COUNT(c.id)                                          AS children,
           SUM(c.status = 'ok')                                 AS valid,
           ROUND(1.0 * SUM(c.status = 'ok') / COUNT(*), 3)      AS validity_rate,
           SUM(c.decision = 'accepted')                         AS accepted,
           ROUND(1.0 * SUM(c.decision = 'accepted') / COUNT(*), 3) AS acceptance_rate,
           MAX(c.speedup)                                       AS best_speedup
    FROM llm_requests r LEFT JOIN candidates c ON c.id = r.candidate_id
    GROUP BY r.run_id, r.mode;
