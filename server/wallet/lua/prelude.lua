-- Shared by every wallet script (prepended in Go). Every key a script
-- touches belongs to one player and carries the player's {hash tag} —
-- but the recovery index, which the bet writes where Redis is not a
-- Cluster (bet.lua).

-- The account hash in one read: balance, house, the journal head, the
-- instant of the player's last ticket (its games' history order, bet.lua),
-- the day's loss with its day, and the bet rate's theoretical arrival time
-- (bet.lua).
local function account(acct)
  local a = redis.call('HMGET', acct, 'balance', 'house', 'jhead', 'jseq', 'hlast', 'lday', 'lost', 'tat')
  return {balance = tonumber(a[1] or '0'), house = tonumber(a[2] or '0'), jhead = a[3] or '', jseq = a[4] or '0',
          hlast = tonumber(a[5] or '0'), lday = a[6], lost = tonumber(a[7] or '0'), tat = tonumber(a[8] or '0')}
end

-- The day's loss so far (stakes less wins): kept in the account hash with
-- its day (UTC, YYYYMMDD, from the server), so that a new day starts from
-- 0 without a key of its own to write and expire.
local function lost_today(a, day)
  if a.lday == day then return a.lost end
  return 0
end

-- Journal compare-and-set: the caller sealed the entry against the head it
-- believed current; if another writer moved the head, nothing is done and
-- the real head is returned so the caller can seal again.
local function journal_moved(a, prev)
  if a.jhead ~= prev then
    return {'err', 'journal_moved', a.jhead, a.jseq}
  end
  return nil
end

-- Appends the journal entry with the ledger row of the money it moves
-- (row: when, kind, amount, ref; then the balance after), and writes the
-- new balance and house take (integers well below 2^53, exact in Lua)
-- with the journal head and any more account fields (name, value, …: a
-- bet's ticket instant, the day's loss): one write to each. The row's
-- fields (l…) sit beside the sealed ones, unsealed, as the player's
-- statement; the archiver moves them to the ledger table (tiers.go). One
-- stream entry for both: the row is what the entry moved, so it needs no
-- stream, id or trimming of its own. An entry's prev (the hash it chains
-- to) is not stored: it is the hash of the entry before it, which the
-- caller sealed against and journal_moved checked (readers link it again:
-- books.go).
local function commit(acct, jkey, j, bal, house, row, more)
  local b = string.format('%d', bal)
  redis.call('XADD', jkey, '*', 'seq', j.seq, 'hash', j.hash, 'mac', j.mac, 'data', j.data,
    'lt', row[1], 'lk', row[2], 'la', row[3], 'lr', row[4], 'lb', b)
  redis.call('HSET', acct, 'balance', b, 'house', string.format('%d', house), 'jhead', j.hash, 'jseq', j.seq, unpack(more or {}))
end

-- Records a choice (continue/box) on an open game with its journal entry;
-- the caller moves the journal head. <field>_at: when it was chosen, so a
-- resumed game keeps its pace after it.
local function record_choice(game, jkey, field, value, tag, at, j)
  redis.call('HSET', game, field, value, field .. '_tag', tag, field .. '_at', at)
  redis.call('XADD', jkey, '*', 'seq', j.seq, 'hash', j.hash, 'mac', j.mac, 'data', j.data)
end

-- Reads the 5 journal arguments starting at ARGV[i].
local function journal_args(i)
  return {seq = ARGV[i], prev = ARGV[i + 1], hash = ARGV[i + 2], mac = ARGV[i + 3], data = ARGV[i + 4]}
end

-- The session that owns the player holds the fencing token; a stale
-- session (taken over, or one whose lease expired) is refused. The owner's
-- money operations extend its lease (lease_ms > 0): a player at play needs
-- no separate renewal.
local function fenced(owner, fence, lease_ms)
  if redis.call('GET', owner) ~= fence then
    return {'err', 'fenced'}
  end
  if lease_ms and lease_ms > 0 then redis.call('PEXPIRE', owner, lease_ms) end
  return nil
end

-- A limit's value in force, from its fields as read (<name>, <name>_pending,
-- <name>_pending_at): a pending raise applies once its date passed.
-- Returns nil if unset.
local function in_force(limits, now, name, value, pending, at)
  if pending and tonumber(at) <= now then
    redis.call('HSET', limits, name, pending)
    redis.call('HDEL', limits, name .. '_pending', name .. '_pending_at')
    return tonumber(pending)
  end
  return tonumber(value)
end

local function limit_in_force(limits, now, name)
  local l = redis.call('HMGET', limits, name, name .. '_pending', name .. '_pending_at')
  return in_force(limits, now, name, l[1], l[2], l[3])
end

-- The end of a self-exclusion in force (ms, as stored), or nil.
local function excluded_until(limits, now)
  local v = redis.call('HGET', limits, 'excluded_until')
  if v and tonumber(v) > now then return v end
  return nil
end

-- Money operation records: what was asked (kind and amount) and the
-- balance answered, kept for the account's life. A retry of the same
-- request gets the first answer ('dup'); the same id for anything else is
-- a conflict, and nothing moves.
local function replayed(op, kind, amount)
  local r = redis.call('HMGET', op, 'kind', 'amount', 'balance')
  if not r[1] then return nil end
  if r[1] ~= kind or r[2] ~= amount then
    return {'err', 'op_conflict', r[1], r[2]}
  end
  return {'dup', r[3]}
end

local function remember(op, kind, amount, balance)
  redis.call('HSET', op, 'kind', kind, 'amount', amount, 'balance', string.format('%d', balance))
end

local function deposit_cap(limits, now, default_cap)
  return limit_in_force(limits, now, 'deposit_cap') or tonumber(default_cap)
end
