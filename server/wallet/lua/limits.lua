-- Sets a player's responsible-gaming limits. Lowering the deposit cap or
-- the loss limit (or setting a first loss limit) takes effect at once;
-- raising either waits for the delay. A self-exclusion lasts from one day
-- to twelve months; once set it can be neither shortened nor extended
-- until it has run out (saving a form again must not change it).
-- KEYS: limits
-- ARGV: now(ms), default cap, raise delay(ms), kind, value, earliest exclusion end(ms), latest(ms)
local limits = KEYS[1]
local now, default_cap, delay, kind, value = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])

if kind == 'deposit_cap' or kind == 'loss_limit' then
  local cur = limit_in_force(limits, now, kind)
  if kind == 'deposit_cap' then cur = cur or tonumber(default_cap) end
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
    if cur == ARGV[5] then return {'ok', 'now', cur} end
    return {'err', 'exclusion_in_force', cur}
  end
  if value < tonumber(ARGV[6]) or value > tonumber(ARGV[7]) then
    return {'err', 'bad_request', 'a self-exclusion lasts from 1 day to 12 months'}
  end
  redis.call('HSET', limits, 'excluded_until', ARGV[5])
  return {'ok', 'now', ARGV[5]}
end
return {'err', 'bad_request', 'unknown limit ' .. kind}
