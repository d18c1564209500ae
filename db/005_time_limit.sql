-- evoeng population store, schema version 5: a run stopped by --time-limit
-- is recorded as status 'time_limit', apart from 'interrupted' (Ctrl-C,
-- SIGTERM). SQLite cannot alter a CHECK constraint, so the runs table is
-- rebuilt with the same columns and rows. src/store/store.c runs every
-- migration with foreign keys off (then checks them before the commit), so
-- dropping the old table cascades nowhere.

CREATE TEMP TABLE runs_004 AS SELECT * FROM runs;
DROP TABLE runs;

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
                     CHECK (status IN ('running', 'completed', 'interrupted', 'time_limit', 'failed')),
    generations_done INTEGER NOT NULL DEFAULT 0,    -- generations fully finished
    baseline_id      INTEGER,                       -- candidates.id of the baseline
    started_at       TEXT    NOT NULL,
    finished_at      TEXT
);

INSERT INTO runs SELECT * FROM runs_004;
DROP TABLE runs_004;
