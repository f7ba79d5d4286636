/*
 * The store schema, as a list of migrations: migration i brings a store from
 * user_version i to i+1. Never edit a released migration; add one.
 * docs/store-format.md explains every table and column.
 */
#ifndef STROBE_STORE_SCHEMA_H
#define STROBE_STORE_SCHEMA_H

#define SCHEMA_VERSION 8
/* The first version with campaigns: a reader of an older store it may not
 * upgrade finds none. */
#define SCHEMA_CAMPAIGNS_VERSION 7
/* The first with Python stack samples: the same for those. */
#define SCHEMA_PY_BLOCKS_VERSION 8

/* clang-format off */
/* one SQL clause per line reads better than reflowed */
static const char *const schema_migrations[SCHEMA_VERSION] = {
    /* 1: catalog, attributes, series, blocks */
    "CREATE TABLE runs("
    " id TEXT PRIMARY KEY,"          /* 16 hex digits, random */
    " name TEXT NOT NULL,"
    " experiment TEXT,"
    " command TEXT NOT NULL,"        /* JSON array of argv */
    " cwd TEXT, user TEXT, host TEXT, kernel TEXT, cpu_model TEXT,"
    " cpu_count INTEGER, mem_total_bytes INTEGER,"
    " start_ns INTEGER NOT NULL,"    /* ns since the Unix epoch, UTC */
    " end_ns INTEGER, last_ns INTEGER,"
    " exit_code INTEGER, signal INTEGER,"
    " status TEXT NOT NULL,"         /* running|finished|failed|crashed|killed|stopped */
    " git_commit TEXT, git_dirty INTEGER,"
    " python_version TEXT, torch_version TEXT,"
    " interval_ns INTEGER,"
    " samples INTEGER NOT NULL DEFAULT 0, points INTEGER NOT NULL DEFAULT 0,"
    " missed INTEGER NOT NULL DEFAULT 0, dropped INTEGER NOT NULL DEFAULT 0,"
    " recorder_pid INTEGER, strobe_version TEXT, error TEXT);"
    "CREATE INDEX runs_by_start ON runs(start_ns);"
    "CREATE INDEX runs_by_name ON runs(name);"
    "CREATE INDEX runs_by_experiment ON runs(experiment, start_ns);"
    "CREATE TABLE run_attrs("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL,"           /* tag|param|env */
    " key TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(run_id, kind, key)) WITHOUT ROWID;"
    "CREATE TABLE series("
    " id INTEGER PRIMARY KEY,"
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, labels TEXT NOT NULL, unit TEXT, meta TEXT,"
    " UNIQUE(run_id, name, labels));"
    "CREATE TABLE blocks("
    " id INTEGER PRIMARY KEY,"
    " series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " count INTEGER NOT NULL,"
    " min REAL, max REAL, sum REAL, first REAL, last REAL," /* NULL is NaN */
    " data BLOB NOT NULL,"           /* codec/gorilla.h stream */
    " UNIQUE(series_id, start_ns));",
    /* 2: framework events: names, processes, event blocks; event counters */
    "ALTER TABLE runs ADD COLUMN events INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN events_dropped INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN events_invalid INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE event_names("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " id INTEGER NOT NULL, name TEXT NOT NULL,"
    " PRIMARY KEY(run_id, id)) WITHOUT ROWID;"
    "CREATE TABLE processes("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " pid INTEGER NOT NULL, ppid INTEGER, comm TEXT,"
    " role TEXT,"                    /* main|rank|dataloader */
    " rank INTEGER, local_rank INTEGER, world_size INTEGER, worker_id INTEGER,"
    " PRIMARY KEY(run_id, pid)) WITHOUT ROWID;"
    "CREATE TABLE event_blocks("
    " id INTEGER PRIMARY KEY,"
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " step_min INTEGER NOT NULL, step_max INTEGER NOT NULL,"
    " count INTEGER NOT NULL,"
    " data BLOB NOT NULL);"          /* codec/events.h block */
    "CREATE INDEX event_blocks_by_time ON event_blocks(run_id, start_ns);"
    "CREATE INDEX event_blocks_by_step ON event_blocks(run_id, step_min);",
    /* 3: bottleneck rules: how they were evaluated, their verdicts, findings */
    "CREATE TABLE rule_config("
    " run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
    " interval_ns INTEGER NOT NULL,"  /* window length */
    " rules TEXT NOT NULL,"           /* comma list, or all */
    " params TEXT NOT NULL,"          /* Rule.param=value lines that differ from defaults */
    " mode TEXT NOT NULL,"            /* live|offline */
    " evaluated_ns INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE rule_results("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " rule TEXT NOT NULL,"
    " status TEXT NOT NULL,"          /* ok|fired|waiting|n/a|report */
    " datapoints INTEGER, violations INTEGER,"
    " detail TEXT, report TEXT,"      /* report: JSON statistics of the Overall* rules */
    " PRIMARY KEY(run_id, rule)) WITHOUT ROWID;"
    "CREATE TABLE findings("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL,"          /* the order they first fired in */
    " rule TEXT NOT NULL, severity TEXT NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " scope TEXT NOT NULL,"           /* node, gpu=G, rank=R, node=N,... */
    " evidence TEXT NOT NULL, events TEXT, recommendation TEXT,"
    " PRIMARY KEY(run_id, seq)) WITHOUT ROWID;",
    /* 4: workloads (runs started together, as in radT), texts kept with a run */
    "ALTER TABLE runs ADD COLUMN workload TEXT;"
    "CREATE INDEX runs_by_workload ON runs(experiment, workload, start_ns);"
    "CREATE TABLE run_texts("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL,"            /* stdout|stderr|packages|lscpu|nvidia-smi */
    " bytes INTEGER NOT NULL,"        /* the original size: more than length(text) when cut */
    " text TEXT NOT NULL,"            /* as written: not always valid UTF-8 */
    " PRIMARY KEY(run_id, kind)) WITHOUT ROWID;",
    /* 5: which process the recorder was, beyond its pid (store/procid.h) */
    "ALTER TABLE runs ADD COLUMN recorder_boot_id TEXT;"       /* /proc/sys/kernel/random/boot_id */
    "ALTER TABLE runs ADD COLUMN recorder_pid_ns INTEGER;"     /* inode of /proc/self/ns/pid */
    "ALTER TABLE runs ADD COLUMN recorder_time_ns INTEGER;"    /* inode of /proc/self/ns/time */
    "ALTER TABLE runs ADD COLUMN recorder_start_ticks INTEGER;", /* proc(5) stat field 22 */
    /* 6: cluster mode: a job's run is a parent, each node's part a run of
     * its own under it (record/cluster.h) */
    "ALTER TABLE runs ADD COLUMN parent_id TEXT;"       /* the job's run; NULL: not a node's */
    "ALTER TABLE runs ADD COLUMN node TEXT;"            /* the node's name, on a node's run */
    "ALTER TABLE runs ADD COLUMN join_key TEXT;"        /* what the nodes joined on, on the job's */
    "ALTER TABLE runs ADD COLUMN clock_offset_ns INTEGER;" /* the store's clock less the node's */
    "ALTER TABLE runs ADD COLUMN clock_rtt_ns INTEGER;" /* round trip of that estimate */
    "ALTER TABLE runs ADD COLUMN clock_shift_ns INTEGER;" /* what the node added to its times */
    "CREATE INDEX runs_by_parent ON runs(parent_id, node);"
    "CREATE INDEX runs_by_join_key ON runs(join_key, start_ns);",
    /* 7: campaigns of strobe sweep, so that a killed one resumes */
    "CREATE TABLE campaigns("
    " name TEXT PRIMARY KEY,"         /* the campaign's experiment name */
    " spec_hash TEXT NOT NULL,"       /* hex digest of the experiment file's plan */
    " file TEXT,"                     /* the experiment file, absolute path, as last run */
    " created_ns INTEGER NOT NULL,"   /* the first put; later puts keep it */
    " updated_ns INTEGER NOT NULL,"   /* the last put */
    " state TEXT NOT NULL);"          /* JSON, the sweep's own: may be MBs, so a rowid table */
    "CREATE INDEX campaigns_by_update ON campaigns(updated_ns);", /* lists without sorting states */
    /* 8: Python stack samples, blocks of pyprof/profile.h */
    "CREATE TABLE py_blocks("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL,"          /* the block's number in the run, from 0 */
    " kind INTEGER NOT NULL,"         /* 0 dictionary, 1 samples */
    " start_ns INTEGER NOT NULL,"     /* the first sample's time (a dictionary: of the */
    " end_ns INTEGER NOT NULL,"       /* samples block after it); the last one's */
    " count INTEGER NOT NULL,"        /* samples, or entries defined */
    " data BLOB NOT NULL,"            /* last: a scan of the others leaves it unread */
    " PRIMARY KEY(run_id, seq));"
    /* the time-range query walks a run's blocks in seq order and tests
     * kind and times from the index alone, reading only the rows it keeps */
    "CREATE INDEX py_blocks_by_time ON py_blocks(run_id, seq, kind, start_ns, end_ns);",
};
/* clang-format on */

#endif
