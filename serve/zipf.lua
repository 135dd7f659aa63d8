-- wrk script: GET /fNNNNN with file k (0-based) chosen with probability
-- proportional to 1/(k+1)^s, the Zipf popularity of serve/bench.sh.
--   wrk ... -s serve/zipf.lua URL -- NFILES S
local cdf, n

function init(args)
	n = tonumber(args[1]) or 1000
	local s = tonumber(args[2]) or 1.0
	local sum = 0
	cdf = {}
	for k = 1, n do
		sum = sum + 1 / k ^ s
		cdf[k] = sum
	end
	for k = 1, n do
		cdf[k] = cdf[k] / sum
	end
	-- Each wrk thread has its own Lua state: seed each differently.
	math.randomseed(os.time() + tonumber(tostring(cdf):match("0x(%x+)") or "0", 16) % 65536)
end

function request()
	local u, lo, hi = math.random(), 1, n
	while lo < hi do
		local mid = math.floor((lo + hi) / 2)
		if cdf[mid] < u then lo = mid + 1 else hi = mid end
	end
	return wrk.format("GET", string.format("/f%05d", lo - 1))
end

-- One line for serve/bench-report.py: wrk's own latency (request sent to
-- response read, per request, in µs; closed loop, so coordinated omission
-- applies), the requests and errors of the measured window.
function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("zipf-lua: requests %d duration_us %d p50_us %d p99_us %d p999_us %d errors %d non2xx %d\n",
		summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
		latency:percentile(99.9), e.connect + e.read + e.write + e.timeout, e.status))
end
