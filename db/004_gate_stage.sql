-- Schema version 4: how far each candidate's correctness gate went (issue
-- 11, staged evaluation). Stage A gates a child on the benchmark shape
-- only; only a child that would be accepted (and the baseline, random
-- members) goes on to stage B, the gate over every shape. A candidate may
-- be a survivor, a parent, the best or an export only at gate_stage 2.
--   0  never gated (static failure: invalid, resource, compile_error)
--   1  gated on the benchmark shape only (stage A)
--   2  gated on every shape (stage B)
ALTER TABLE candidates ADD COLUMN gate_stage INTEGER NOT NULL DEFAULT 0
    CHECK (gate_stage IN (0, 1, 2));

-- Rows written before this version went through one gate over every shape
-- when they passed it; a failure there counts as reaching the gate.
UPDATE candidates SET gate_stage = CASE
    WHEN status = 'ok' THEN 2
    WHEN status IN ('incorrect', 'crashed', 'timeout', 'launch_error') THEN 1
    ELSE 0 END;

-- The views that pick survivors and bests now require the full gate.
DROP VIEW best_per_run;
DROP VIEW survivors;
DROP VIEW lineage;
DROP VIEW llm_mode_stats;

-- Candidates that can be parents: the baseline and accepted children that
-- passed the gate over every shape.
CREATE VIEW survivors AS
    SELECT * FROM candidates
    WHERE decision IN ('baseline', 'accepted') AND status = 'ok' AND gate_stage = 2
      AND latency_us IS NOT NULL;

-- The fastest surviving candidate of each run.
CREATE VIEW best_per_run AS
    SELECT s.run_id, s.id AS candidate_id, s.generation, s.latency_us, s.speedup, s.params_json
    FROM survivors s
    WHERE s.id = (SELECT s2.id FROM survivors s2 WHERE s2.run_id = s.run_id
                  ORDER BY s2.latency_us, s2.id LIMIT 1);

-- Every (candidate, ancestor) pair with its distance, as in version 1,
-- with each ancestor's gate stage.
CREATE VIEW lineage AS
    WITH RECURSIVE chain(candidate_id, ancestor_id, depth) AS (
        SELECT id, id, 0 FROM candidates
        UNION ALL
        SELECT chain.candidate_id, c.parent_id, chain.depth + 1
        FROM chain JOIN candidates c ON c.id = chain.ancestor_id
        WHERE c.parent_id IS NOT NULL
    )
    SELECT chain.candidate_id, chain.depth, a.id AS ancestor_id, a.generation, a.operator,
           a.decision, a.latency_us, a.speedup, a.ratio_to_parent, a.params_json, a.gate_stage
    FROM chain JOIN candidates a ON a.id = chain.ancestor_id;

-- Per run and mode, as in version 2, but the best speedup only counts
-- children that passed the gate over every shape.
CREATE VIEW llm_mode_stats AS
    SELECT r.run_id, r.mode,
           COUNT(*)                                             AS requests,
           COUNT(c.id)                                          AS children,
           SUM(c.status = 'ok')                                 AS valid,
           ROUND(1.0 * SUM(c.status = 'ok') / COUNT(*), 3)      AS validity_rate,
           SUM(c.decision = 'accepted')                         AS accepted,
           ROUND(1.0 * SUM(c.decision = 'accepted') / COUNT(*), 3) AS acceptance_rate,
           MAX(CASE WHEN c.gate_stage = 2 THEN c.speedup END)   AS best_speedup
    FROM llm_requests r LEFT JOIN candidates c ON c.id = r.candidate_id
    GROUP BY r.run_id, r.mode;
