-- wrk script for bench/run.sh: counts every non-2xx response as an error and writes one
-- JSON line with the figures of the run to $BENCH_OUT (appended).
--
-- Environment:
--   BENCH_OUT     file to append the JSON line to (required)
--   BENCH_METHOD  GET (default) or POST
--   BENCH_BODY    for POST: the body of every request, as it is (bench/run.sh sets it for
--                 the create route); when empty or unset, a POST is a resize:
--   BENCH_COUNTS  for POST without BENCH_BODY (resize): comma-separated node counts used in
--                 turn, e.g. "2,3"; each request sends {"node_count": K, "nodegroup":
--                 "default-worker"}
--   BENCH_TAG     free text copied into the JSON line
--
-- GETs and POSTs with BENCH_BODY keep wrk's static request (no Lua per request); resize
-- POSTs build the body per request.
-- The response() hook costs a little per response but is the only way to see statuses
-- other than >= 400 (wrk's own summary only counts those).

local method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY") or ""
local counts = {}
for k in string.gmatch(os.getenv("BENCH_COUNTS") or "3", "%d+") do
  counts[#counts + 1] = tonumber(k)
end

-- Wall clock (LuaJIT FFI): requests/s is computed over the time from the start of the run
-- to the last completed response.  For a server that answers thousands of requests per
-- second this is wrk's own figure; for one that answers a few (the real Magnum at 32
-- connections, where a threaded Python process shares the GIL among 32 requests that then
-- all finish late) it does not count the tail after the last completion as idle time.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clk_id, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  threads[#threads + 1] = thread
end

function init(args)
  non2xx = 0
  first_bad = ""
  statuses = {}
  seq = 0
  t0 = now()
  tlast = 0
  wrk.method = method
  if method == "POST" then
    wrk.headers["Content-Type"] = "application/json"
    if body ~= "" then
      wrk.body = body
    end
  end
end

if method == "POST" and body == "" then
  function request()
    seq = seq + 1
    local k = counts[(seq % #counts) + 1]
    local body = string.format('{"node_count": %d, "nodegroup": "default-worker"}', k)
    return wrk.format("POST", nil, nil, body)
  end
end

function response(status, headers, body)
  tlast = now()
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_bad == "" then
      first_bad = key .. " " .. string.sub(body or "", 1, 200)
    end
  end
end

local function jstr(s)
  s = string.gsub(s, '[%c"\\]', function(c)
    return string.format("\\u%04x", string.byte(c))
  end)
  return '"' .. s .. '"'
end

function done(summary, latency, requests)
  local bad, first = 0, ""
  local merged = {}
  local first_t0, last_t = nil, 0
  for _, t in ipairs(threads) do
    local a, b = t:get("t0"), t:get("tlast") or 0
    if a and (first_t0 == nil or a < first_t0) then first_t0 = a end
    if b > last_t then last_t = b end
    bad = bad + (t:get("non2xx") or 0)
    local f = t:get("first_bad") or ""
    if first == "" then first = f end
    local st = t:get("statuses") or {}
    for k, v in pairs(st) do merged[k] = (merged[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(merged) do parts[#parts + 1] = string.format('"%s": %d', k, v) end
  local e = summary.errors
  local socket = e.connect + e.read + e.write + e.timeout
  local secs = summary.duration / 1e6
  local busy = (first_t0 and last_t > first_t0) and (last_t - first_t0) or secs
  local line = string.format(
    '{"tag": %s, "requests": %d, "seconds": %.3f, "to_last_s": %.3f, "rps": %.2f, '
      .. '"rps_wrk": %.2f, '
      .. '"p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, "mean_ms": %.3f, "max_ms": %.3f, '
      .. '"non2xx": %d, "socket_errors": %d, "connect": %d, "read": %d, "write": %d, '
      .. '"timeout": %d, "wrk_status_errors": %d, "statuses": {%s}, "first_bad": %s}',
    jstr(os.getenv("BENCH_TAG") or ""), summary.requests, secs, busy,
    summary.requests > 0 and summary.requests / busy or 0, summary.requests / secs,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.mean / 1000, latency.max / 1000,
    bad, socket, e.connect, e.read, e.write, e.timeout, e.status,
    table.concat(parts, ", "), jstr(first))
  local path = os.getenv("BENCH_OUT")
  if path then
    local f = assert(io.open(path, "a"))
    f:write(line, "\n")
    f:close()
  else
    io.write(line, "\n")
  end
end
