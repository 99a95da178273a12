-- The archive: every sealed journal entry, settled game and ledger row that
-- left Redis, for years. Tables are partitioned by month (created on
-- demand by the archiver; the default partition only catches strays).
-- Primary keys make every copy idempotent: a batch archived twice (a crash
-- between the commit here and the trim in Redis) lands once.

CREATE TABLE journal (
    player    text        NOT NULL,
    seq       bigint      NOT NULL,
    at        timestamptz NOT NULL, -- when Redis appended it (its stream id)
    stream_id text        NOT NULL,
    prev      text        NOT NULL,
    hash      text        NOT NULL,
    mac       text        NOT NULL,
    data      text        NOT NULL,
    PRIMARY KEY (player, seq, at)
) PARTITION BY RANGE (at);
CREATE TABLE journal_default PARTITION OF journal DEFAULT;

CREATE TABLE games (
    player  text        NOT NULL,
    id      text        NOT NULL,
    created timestamptz NOT NULL,
    settled timestamptz NOT NULL,
    cursor  bigint      NOT NULL, -- the history order (ms × 8 + index), shared with Redis
    picks   smallint    NOT NULL,
    stake   bigint      NOT NULL,
    win     bigint      NOT NULL,
    fields  json        NOT NULL, -- the stored record as Redis held it, seal tags included (json: stored as sent, cheaper than jsonb to write)
    PRIMARY KEY (player, id, created)
) PARTITION BY RANGE (created);
CREATE TABLE games_default PARTITION OF games DEFAULT;
CREATE INDEX games_history ON games (player, cursor);
CREATE INDEX games_recall ON games (id);
CREATE INDEX games_settled ON games (settled);

CREATE TABLE ledger (
    player    text        NOT NULL,
    stream_id text        NOT NULL,
    at        timestamptz NOT NULL,
    kind      text        NOT NULL,
    amount    bigint      NOT NULL,
    balance   bigint      NOT NULL,
    ref       text        NOT NULL,
    PRIMARY KEY (player, stream_id, at)
) PARTITION BY RANGE (at);
CREATE TABLE ledger_default PARTITION OF ledger DEFAULT;
CREATE INDEX ledger_statement ON ledger (player, at);

-- The archiver's signed record of each player's archived head: deleting
-- a player's newest archived entries, or all of them, is seen by verify.
CREATE TABLE checkpoints (
    player text        PRIMARY KEY,
    seq    bigint      NOT NULL,
    hash   text        NOT NULL,
    mac    text        NOT NULL,
    at     timestamptz NOT NULL
);
