-- KEYS: acct, limits, op, journal, deposits
-- ARGV: amount, now(ms), default weekly cap, week(ms), journal(5)
local acct, limits, op, jkey, deps = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local amount, now, default_cap, week = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local j = journal_args(5)

local done = replayed(op, 'deposit', ARGV[1])
if done then return done end
local a = account(acct)
local moved = journal_moved(a, j.prev)
if moved then return moved end

local excluded = excluded_until(limits, now)
if excluded then
  return {'err', 'limit_reached', 'self_excluded', excluded, '0'}
end
local cap = deposit_cap(limits, now, default_cap)
redis.call('ZREMRANGEBYSCORE', deps, '-inf', now - week)
local used = 0
for _, m in ipairs(redis.call('ZRANGE', deps, 0, -1)) do
  used = used + tonumber(string.match(m, ':(%d+)$'))
end
if used + amount > cap then
  return {'err', 'limit_reached', 'deposit_cap', tostring(cap), tostring(cap - used)}
end
redis.call('ZADD', deps, now, j.seq .. ':' .. amount)
redis.call('PEXPIRE', deps, week)
local bal = a.balance + amount
redis.call('HINCRBY', acct, 'deposited', amount)
commit(acct, jkey, j, bal, a.house, {now, 'deposit', amount, j.seq})
remember(op, 'deposit', ARGV[1], bal)
return {'ok', tostring(bal)}
