-- Seamless mode: records the operator's balance as the one shown, unless
-- an answer to a call sent later (at: ms) was recorded already — answers
-- may come back out of order.
local function show_balance(acct, balance, at)
  local prev = tonumber(redis.call('HGET', acct, 'op_balance_at') or '0')
  if tonumber(at) >= prev then
    redis.call('HSET', acct, 'seamless', '1', 'op_balance', balance, 'op_balance_at', at)
  end
end
