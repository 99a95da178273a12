-- KEYS: acct, op, journal, ledger
-- ARGV: amount, now(ms), op ttl(s), journal(5)
local acct, op, jkey, lkey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local amount, now, opttl = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local j = journal_args(4)

local done = redis.call('GET', op)
if done then return {'dup', done} end
local moved = journal_moved(acct, j.prev)
if moved then return moved end
local bal = balance(acct)
if amount > bal then
  return {'err', 'insufficient_funds', tostring(bal)}
end
bal = redis.call('HINCRBY', acct, 'balance', -amount)
redis.call('HINCRBY', acct, 'withdrawn', amount)
ledger(lkey, now, 'withdraw', -amount, bal, j.seq)
journal_append(acct, jkey, j)
redis.call('SET', op, bal, 'EX', opttl)
return {'ok', tostring(bal)}
