-- evoeng population store, schema version 1: runs, sources, compiles,
-- candidates, generations, and the views a user wants in the sqlite3 shell.
-- Applied by src/store.c inside one transaction together with
-- PRAGMA user_version = 1. Never edit a released migration: add a new file.

CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    task_name        TEXT    NOT NULL,
    task_path        TEXT    NOT NULL,
    task_json        TEXT    NOT NULL,              -- the spec, as loaded
    config_json      TEXT    NOT NULL,              -- every option of the run
    device_name      TEXT,
    device_arch      TEXT,
    device_json      TEXT,                          -- DeviceInfo as JSON
    nvrtc_version    TEXT,
    driver_version   TEXT,
    evoeng_version   TEXT    NOT NULL,
    seed             INTEGER NOT NULL,
    strategy         TEXT    NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'running'
                     CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
    generations_done INTEGER NOT NULL DEFAULT 0,    -- generations fully finished
    baseline_id      INTEGER,                       -- candidates.id of the baseline
    started_at       TEXT    NOT NULL,
    finished_at      TEXT
);

-- Kernel sources, deduplicated by the SHA-256 of their text.
CREATE TABLE sources (
    hash       TEXT PRIMARY KEY,
    text       TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at TEXT    NOT NULL
);

-- One row per distinct compilation (cache key = source, options, arch, NVRTC).
CREATE TABLE compiles (
    id             INTEGER PRIMARY KEY,
    cache_key      TEXT    NOT NULL UNIQUE,
    source_hash    TEXT    NOT NULL REFERENCES sources(hash),
    arch           TEXT    NOT NULL,
    options        TEXT    NOT NULL,
    nvrtc_version  TEXT,
    ok             INTEGER NOT NULL,
    log            TEXT,
    registers      INTEGER,
    smem           INTEGER,                          -- static shared memory, bytes
    spill_stores   INTEGER,
    spill_loads    INTEGER,
    stack          INTEGER,
    resources_json TEXT,                             -- per-kernel ptxas figures
    compile_ms     REAL,
    created_at     TEXT    NOT NULL
);

CREATE TABLE candidates (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation      INTEGER NOT NULL,
    parent_id       INTEGER REFERENCES candidates(id),
    parent2_id      INTEGER REFERENCES candidates(id),
    operator        TEXT    NOT NULL,                -- baseline, random, mutate, reset, crossover, llm, exhaustive
    params_json     TEXT    NOT NULL,                -- {"BLOCK_M":64,...}
    params_key      TEXT    NOT NULL,                -- canonical identity within the run (dedup)
    source_hash     TEXT    REFERENCES sources(hash),
    compile_id      INTEGER REFERENCES compiles(id),
    status          TEXT    NOT NULL
                    CHECK (status IN ('ok', 'incorrect', 'crashed', 'timeout', 'launch_error',
                                      'resource', 'compile_error', 'invalid')),
    decision        TEXT    NOT NULL
                    CHECK (decision IN ('baseline', 'accepted', 'reverted', 'failed')),
    error           TEXT,                            -- one-line reason for a failure
    gate_json       TEXT,                            -- gate details: max errors, first bad index, check
    log             TEXT,                            -- worker / evaluation log
    latency_us      REAL,                            -- median over samples, benchmark shape
    p90_us          REAL,
    cv              REAL,                            -- coefficient of variation of the samples
    ratio_to_parent REAL,                            -- interleaved A/B median, child/parent
    ratio_spread    REAL,                            -- p90 - p10 of the pair ratios
    speedup         REAL,                            -- baseline latency / this latency
    ctas            INTEGER,                         -- CTAs of the largest launch
    ctas_total      INTEGER,                         -- over the whole launch plan
    threads         INTEGER,                         -- per CTA, largest launch
    registers       INTEGER,
    smem_static     INTEGER,
    smem_dynamic    INTEGER,
    occupancy       INTEGER,                         -- active CTAs per SM
    waves           REAL,
    tflops          REAL,
    gbps            REAL,
    pct_peak_flops  REAL,
    pct_peak_bw     REAL,
    metrics_json    TEXT,                            -- per-launch metrics
    compile_ms      REAL,
    gate_ms         REAL,
    time_ms         REAL,
    created_at      TEXT    NOT NULL,
    decided_at      TEXT    NOT NULL
);
CREATE INDEX candidates_run        ON candidates(run_id, generation);
CREATE INDEX candidates_run_params ON candidates(run_id, params_key);
CREATE INDEX candidates_parent     ON candidates(parent_id);

CREATE TABLE generations (
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation      INTEGER NOT NULL,
    best_id         INTEGER REFERENCES candidates(id),
    best_latency_us REAL,
    evaluated       INTEGER NOT NULL,
    valid           INTEGER NOT NULL,
    accepted        INTEGER NOT NULL,
    reverted        INTEGER NOT NULL,
    failed          INTEGER NOT NULL,
    wall_ms         REAL,
    finished_at     TEXT    NOT NULL,
    PRIMARY KEY (run_id, generation)
);

-- Candidates that can be parents: the baseline and accepted children.
CREATE VIEW survivors AS
    SELECT * FROM candidates
    WHERE decision IN ('baseline', 'accepted') AND status = 'ok' AND latency_us IS NOT NULL;

-- The fastest surviving candidate of each run.
CREATE VIEW best_per_run AS
    SELECT s.run_id, s.id AS candidate_id, s.generation, s.latency_us, s.speedup, s.params_json
    FROM survivors s
    WHERE s.id = (SELECT s2.id FROM survivors s2 WHERE s2.run_id = s.run_id
                  ORDER BY s2.latency_us, s2.id LIMIT 1);

-- Every (candidate, ancestor) pair with its distance: depth 0 is the
-- candidate itself. SELECT * FROM lineage WHERE candidate_id = 42 ORDER BY depth;
CREATE VIEW lineage AS
    WITH RECURSIVE chain(candidate_id, ancestor_id, depth) AS (
        SELECT id, id, 0 FROM candidates
        UNION ALL
        SELECT chain.candidate_id, c.parent_id, chain.depth + 1
        FROM chain JOIN candidates c ON c.id = chain.ancestor_id
        WHERE c.parent_id IS NOT NULL
    )
    SELECT chain.candidate_id, chain.depth, a.id AS ancestor_id, a.generation, a.operator,
           a.decision, a.latency_us, a.speedup, a.ratio_to_parent, a.params_json
    FROM chain JOIN candidates a ON a.id = chain.ancestor_id;

-- Counts by status and decision per run.
CREATE VIEW run_counts AS
    SELECT run_id, status, decision, COUNT(*) AS n FROM candidates GROUP BY run_id, status, decision;
