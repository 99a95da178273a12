-- KEYS: acct, op, journal
-- ARGV: amount, now(ms), journal(5)
local acct, op, jkey = KEYS[1], KEYS[2], KEYS[3]
local amount, now = tonumber(ARGV[1]), ARGV[2]
local j = journal_args(3)

local done = replayed(op, 'withdraw', ARGV[1])
if done then return done end
local a = account(acct)
local moved = journal_moved(a, j.prev)
if moved then return moved end
if amount > a.balance then
  return {'err', 'insufficient_funds', tostring(a.balance)}
end
local bal = a.balance - amount
redis.call('HINCRBY', acct, 'withdrawn', amount)
commit(acct, jkey, j, bal, a.house, {now, 'withdraw', -amount, j.seq})
remember(op, 'withdraw', ARGV[1], bal)
return {'ok', tostring(bal)}
