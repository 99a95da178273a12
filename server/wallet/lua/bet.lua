-- Accepts a ticket of 1..5 games: checks every limit, debits the total,
-- records each game with its full outcome and seals it, all at once.
-- The games were dealt from the provably fair inputs the session believed
-- current (server seed, client seed, first nonce); if they are not — the
-- seed was rotated, the client seed changed, or nonces were taken — the
-- current ones are returned and nothing is done: the session deals again.
-- The nonces are taken here, with the bet, so no game is ever dealt from a
-- seed already revealed, and no nonce is spent on a ticket never placed.
-- Seamless mode (the operator's wallet holds the money): the operator has
-- already debited the total; the balance here is not checked, and the bet
-- lands only if the debit's outbox entry is still "in flight" — taking it
-- is the bet's last check, so a debit is either played or rolled back,
-- never both (outbox.go).
-- KEYS: acct, limits, op, journal, history, owner, open, fair, outbox, game keys…
-- ARGV: now(ms), total, ticket max, fence, day (UTC, YYYYMMDD), history cutoff(ms),
--       bet interval(ms; 0: no limit), bet burst tolerance(ms),
--       server seed (hex), client seed, first nonce, lease (ms),
--       seamless: the debit's outbox field ('' otherwise), the operator's balance after it and when the debit was sent (ms),
--       journal(5), n, the recovery entries (n-1 members after their due time in ms; n = 1, '': none),
--       then per game: game id, record (JSON), seal tag of the record
-- The recovery entries (recovery.go) are the one write outside the
-- player's keys: only where Redis is not a Cluster, the recovery index as
-- the last key.
local acct, limits, op, jkey, hist, owner, open, fair, outbox =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local now, total, ticket_max, fence = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local day, cutoff = ARGV[5], ARGV[6]
local interval, tolerance = tonumber(ARGV[7]), tonumber(ARGV[8])
local seed, client, nonce = ARGV[9], ARGV[10], tonumber(ARGV[11])
local lease_ms = tonumber(ARGV[12])
local debit, op_balance, op_at = ARGV[13], ARGV[14], ARGV[15]
local j = journal_args(16)
local nreserve = tonumber(ARGV[21])
local first = 22 + nreserve
local nkeys = 9

local done = redis.call('GET', op)
if done then
  -- Landed before: a debit intent written again by a retry is stale.
  if debit ~= '' then redis.call('HDEL', outbox, debit) end
  return {'dup', done}
end
local a = account(acct)
local bad = fenced(owner, fence, lease_ms) or journal_moved(a, j.prev)
if bad then return bad end
local f = redis.call('HMGET', fair, 'seed', 'client', 'nonce')
local next_nonce = tonumber(f[3] or '0') + 1
if f[1] ~= seed or (f[2] or '') ~= client or next_nonce ~= nonce then
  return {'err', 'fair_moved', f[1] or '', f[2] or '', tostring(next_nonce)}
end

-- The bet rate (GCRA), checked here rather than in a round trip of its
-- own; after the replay and fence checks, so that neither a retried bet
-- nor a stale attempt spends the budget. Its state, the theoretical
-- arrival time, is a field of the account written with the balance: only
-- a bet that lands spends it (a refused one moved nothing to limit), and
-- no key of its own is made and expired for each bet.
local next_tat
if interval > 0 then
  local tat = math.max(a.tat, now)
  local wait = tat - now - tolerance
  if wait > 0 then return {'err', 'rate_limited', 'bets', tostring(wait)} end
  next_tat = string.format('%d', tat + interval)
end

-- The limits a bet weighs, in one read.
local l = redis.call('HMGET', limits, 'excluded_until', 'loss_limit', 'loss_limit_pending', 'loss_limit_pending_at')
if l[1] and tonumber(l[1]) > now then
  return {'err', 'limit_reached', 'self_excluded', l[1], '0'}
end
if total > ticket_max then
  return {'err', 'limit_reached', 'ticket_max', tostring(ticket_max), tostring(ticket_max)}
end
local lim = in_force(limits, now, 'loss_limit', l[2], l[3], l[4])
local lost = lost_today(a, day)
if lim then
  if lost + total > lim then
    return {'err', 'limit_reached', 'loss_limit', tostring(lim), tostring(math.max(lim - lost, 0))}
  end
end
if debit == '' and total > a.balance then
  return {'err', 'insufficient_funds', tostring(a.balance)}
end
if debit ~= '' then
  if redis.call('HDEL', outbox, debit) == 0 then return {'err', 'rolled_back'} end
  show_balance(acct, op_balance, op_at)
end

local bal = a.balance - total
if tonumber(j.seq) % 32 == 0 then -- trim the 31-day history now and then, not on every bet
  redis.call('ZREMRANGEBYSCORE', hist, '-inf', tonumber(cutoff) * 8)
end
-- History scores order every game totally: (ticket instant × 8 + index),
-- the instant made strictly later than the player's previous ticket's, so
-- that two tickets never share a score even within one millisecond and a
-- page boundary can never fall between equal scores.
local base = math.max(now, a.hlast + 1) -- written with the balance (commit)
redis.call('HINCRBY', fair, 'nonce', (#ARGV - first + 1) / 3)
local n = 0
for i = first, #ARGV, 3 do
  n = n + 1
  local gid = ARGV[i]
  local score = string.format('%d', base * 8 + n - 1)
  redis.call('HSET', KEYS[nkeys + n], 'rec', ARGV[i + 1], 'tag', ARGV[i + 2], 'status', 'open', 'cursor', score)
  redis.call('ZADD', hist, score, gid)
  redis.call('SADD', open, gid)
end
if nreserve > 1 then
  local due = ARGV[22]
  for i = 23, first - 1 do redis.call('ZADD', KEYS[#KEYS], due, ARGV[i]) end
end
local more = {'hlast', string.format('%d', base), 'lday', day, 'lost', string.format('%d', lost + total)}
if next_tat then table.insert(more, 'tat'); table.insert(more, next_tat) end
commit(acct, jkey, j, bal, a.house + total, {now, 'stake', -total, j.seq}, more)
redis.call('SET', op, bal) -- kept: a ticket id is never accepted twice, however late the retry
return {'ok', tostring(bal)}
