-- Shared by every wallet script (prepended in Go). Every key a script
-- touches belongs to one player and carries the player's {hash tag}.

-- Journal compare-and-set: the caller sealed the entry against the head it
-- believed current; if another writer moved the head, nothing is done and
-- the real head is returned so the caller can seal again.
local function journal_moved(acct, prev)
  local head = redis.call('HGET', acct, 'jhead') or ''
  if head ~= prev then
    return {'err', 'journal_moved', head, redis.call('HGET', acct, 'jseq') or '0'}
  end
  return nil
end

local function journal_append(acct, jkey, j)
  redis.call('XADD', jkey, '*', 'seq', j.seq, 'prev', j.prev, 'hash', j.hash, 'mac', j.mac, 'data', j.data)
  redis.call('HSET', acct, 'jhead', j.hash, 'jseq', j.seq)
end

-- Reads the 5 journal arguments starting at ARGV[i].
local function journal_args(i)
  return {seq = ARGV[i], prev = ARGV[i + 1], hash = ARGV[i + 2], mac = ARGV[i + 3], data = ARGV[i + 4]}
end

-- The session that owns the player holds the fencing token; a stale
-- session (taken over, or one whose lease expired) is refused.
local function fenced(owner, fence)
  if redis.call('GET', owner) ~= fence then
    return {'err', 'fenced'}
  end
  return nil
end

local function ledger(lkey, now, kind, amount, balance, ref)
  redis.call('XADD', lkey, 'MAXLEN', '~', '10000', '*', 't', now, 'kind', kind, 'amount', amount, 'balance', balance, 'ref', ref)
end

local function balance(acct)
  return tonumber(redis.call('HGET', acct, 'balance') or '0')
end

-- A limit's value in force: a pending raise applies once its date passed.
-- Fields: <name>, <name>_pending, <name>_pending_at. Returns nil if unset.
local function limit_in_force(limits, now, name)
  local l = redis.call('HMGET', limits, name, name .. '_pending', name .. '_pending_at')
  if l[2] and tonumber(l[3]) <= now then
    redis.call('HSET', limits, name, l[2])
    redis.call('HDEL', limits, name .. '_pending', name .. '_pending_at')
    return tonumber(l[2])
  end
  return tonumber(l[1])
end

local function deposit_cap(limits, now, default_cap)
  return limit_in_force(limits, now, 'deposit_cap') or tonumber(default_cap)
end
