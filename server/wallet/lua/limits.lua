-- Sets a player's responsible-gaming limits. Lowering the deposit cap or
-- the loss limit (or setting a first loss limit) takes effect at once;
-- raising either waits for the delay. A self-exclusion lasts from one day
-- to twelve months; once set it can be neither shortened nor extended
-- until it has run out (saving a form again must not change it).
-- Every change is sealed in the player's journal (who asked, what, when).
-- KEYS: limits, acct, journal
-- ARGV: now(ms), default cap, raise delay(ms), kind, value, earliest exclusion end(ms), latest(ms), journal(5)
local limits, acct, jkey = KEYS[1], KEYS[2], KEYS[3]
local now, default_cap, delay, kind, value = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local j = journal_args(8)

-- The change is journaled first (compare-and-set on the head): nothing
-- changes unless it is sealed.
local function sealed()
  local moved = journal_moved(account(acct), j.prev)
  if moved then return moved end
  redis.call('XADD', jkey, '*', 'seq', j.seq, 'prev', j.prev, 'hash', j.hash, 'mac', j.mac, 'data', j.data)
  redis.call('HSET', acct, 'jhead', j.hash, 'jseq', j.seq)
  return nil
end

if kind == 'deposit_cap' or kind == 'loss_limit' then
  local cur = limit_in_force(limits, now, kind)
  if kind == 'deposit_cap' then cur = cur or tonumber(default_cap) end
  local bad = sealed()
  if bad then return bad end
  if not cur or value <= cur then
    redis.call('HSET', limits, kind, ARGV[5])
    redis.call('HDEL', limits, kind .. '_pending', kind .. '_pending_at')
    return {'ok', 'now', ARGV[5]}
  end
  redis.call('HSET', limits, kind .. '_pending', ARGV[5], kind .. '_pending_at', string.format('%d', now + delay))
  return {'ok', 'pending', string.format('%d', now + delay)}
elseif kind == 'excluded_until' then
  local cur = excluded_until(limits, now)
  if cur then
    if cur == ARGV[5] then return {'dup', 'now', cur} end -- the same again: nothing to seal
    return {'err', 'exclusion_in_force', cur}
  end
  if value < tonumber(ARGV[6]) or value > tonumber(ARGV[7]) then
    return {'err', 'bad_request', 'a self-exclusion lasts from 1 day to 12 months'}
  end
  local bad = sealed()
  if bad then return bad end
  redis.call('HSET', limits, 'excluded_until', ARGV[5])
  return {'ok', 'now', ARGV[5]}
end
return {'err', 'bad_request', 'unknown limit ' .. kind}
