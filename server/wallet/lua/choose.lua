-- Records one player choice (continue/box) on an open game; choices are
-- final, so a second one for the same field is refused.
-- KEYS: acct, journal, game, owner
-- ARGV: fence, field, value, journal(5), seal tag of the choice, now (ms), lease (ms)
local acct, jkey, game, owner = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local fence, field, value = ARGV[1], ARGV[2], ARGV[3]
local j = journal_args(4)

local st = redis.call('HMGET', game, 'status', field)
if not st[1] then return {'err', 'no_game'} end
if st[1] ~= 'open' then return {'err', 'settled'} end
if st[2] then
  if st[2] == value then return {'dup', value} end
  return {'err', 'already_chosen', st[2]}
end
local bad = fenced(owner, fence, tonumber(ARGV[11])) or journal_moved(account(acct), j.prev)
if bad then return bad end
record_choice(game, jkey, field, value, ARGV[9], ARGV[10], j)
redis.call('HSET', acct, 'jhead', j.hash, 'jseq', j.seq)
return {'ok', value}
