-- Pays a finished game exactly once (idempotent by game id).
-- With the game's last choice (one after which nothing more is shown: a
-- stop, an Extra box), records it first, journaled as choose.lua does, in
-- the same script: one call and one fsync instead of two. A game already
-- carrying a value for that field is refused (already_chosen), nothing done;
-- a game settled already is a 'dup' only if it carries this choice (a retry
-- of this call), and refused (settled) if it was settled without it.
-- Seamless mode: the win's credit is put in the player's outbox with the
-- settlement, so that it is sent until acknowledged, whatever happens.
-- KEYS: acct, journal, game, owner, open, outbox
-- ARGV: now(ms), fence, game id, win, result (JSON), day (UTC, YYYYMMDD), journal(5), seal tag of the settlement, lease (ms),
--       seamless: the credit's outbox field and call (JSON), '' otherwise,
--       the last choice: field ('' for none), value, seal tag, journal(5) (before the settlement's)
local acct, jkey, game, owner, open, outbox = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now, fence, gid, win, result = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local day = ARGV[6]
local j = journal_args(7)
local field = ARGV[16]
local first = j -- the first journal entry written
if field ~= '' then first = journal_args(19) end

local st = redis.call('HMGET', game, 'status', 'win', field ~= '' and field or 'status')
if not st[1] then return {'err', 'no_game'} end
local a = account(acct)
if st[1] == 'settled' then
  if field ~= '' and st[3] ~= ARGV[17] then return {'err', 'settled'} end
  return {'dup', st[2], tostring(a.balance)}
end
if field ~= '' and st[3] then return {'err', 'already_chosen', st[3]} end
local bad = fenced(owner, fence, tonumber(ARGV[13])) or journal_moved(a, first.prev)
if bad then return bad end

if field ~= '' then record_choice(game, jkey, field, ARGV[17], ARGV[18], now, first) end
local bal = a.balance + win
redis.call('HSET', game, 'status', 'settled', 'win', ARGV[4], 'result', result, 'settled', now, 'stag', ARGV[12])
redis.call('SREM', open, gid)
if ARGV[14] ~= '' then redis.call('HSET', outbox, ARGV[14], ARGV[15]) end
commit(acct, jkey, j, bal, a.house - win, {now, 'win', win, gid}, {'lday', day, 'lost', string.format('%d', lost_today(a, day) - win)})
return {'ok', tostring(win), tostring(bal)}
