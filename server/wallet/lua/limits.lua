-- Sets a player's responsible-gaming limits. Lowering the deposit cap or
-- the loss limit (or setting a first loss limit) takes effect at once;
-- raising either waits for the delay. Self-exclusion only ever extends.
-- KEYS: limits
-- ARGV: now(ms), default cap, raise delay(ms), kind, value
local limits = KEYS[1]
local now, default_cap, delay, kind, value = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])

if kind == 'deposit_cap' or kind == 'loss_limit' then
  local cur = limit_in_force(limits, now, kind)
  if kind == 'deposit_cap' then cur = cur or tonumber(default_cap) end
  if not cur or value <= cur then
    redis.call('HSET', limits, kind, value)
    redis.call('HDEL', limits, kind .. '_pending', kind .. '_pending_at')
    return {'ok', 'now', tostring(value)}
  end
  redis.call('HSET', limits, kind .. '_pending', value, kind .. '_pending_at', now + delay)
  return {'ok', 'pending', tostring(now + delay)}
elseif kind == 'excluded_until' then
  local cur = tonumber(redis.call('HGET', limits, 'excluded_until') or '0')
  if value > cur then redis.call('HSET', limits, 'excluded_until', value) end
  return {'ok', 'now', tostring(math.max(value, cur))}
end
return {'err', 'bad_request', 'unknown limit ' .. kind}
