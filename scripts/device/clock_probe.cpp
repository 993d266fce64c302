// Device probe (not CI): after an idle wait, does the core run slower for a while, and how fast is it in this
// process? Times a fixed chain of dependent adds (no memory) in 40 consecutive chunks right after a sleep (or a busy
// wait) of W ms; prints chunk medians over 200 trials in ns. docs/benchmarks.md § heap, "The host's clock".
//   g++ -O2 -o clock_probe scripts/device/clock_probe.cpp && ./clock_probe 5 [busy]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
static inline uint64_t chain(uint64_t x, int n)
{
	for (int i = 0; i < n; ++i)
	{
		x += i;
		asm volatile("" : "+r"(x));
	}
	return x;
}
int main(int argc, char** argv)
{
	const double wait_ms = argc > 1 ? atof(argv[1]) : 5.0;
	const bool busy = argc > 2 && argv[2][0] == 'b';
	const int chunks = 40, trials = 200, n = 20000;
	std::vector<std::vector<double>> t(chunks);
	uint64_t x = 1;
	for (int tr = 0; tr < trials; ++tr)
	{
		auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(int(wait_ms * 1000));
		if (busy)
		{
			while (std::chrono::steady_clock::now() < until)
			{
			}
		}
		else
			std::this_thread::sleep_until(until);
		for (int c = 0; c < chunks; ++c)
		{
			auto a = std::chrono::steady_clock::now();
			x = chain(x, n);
			auto b = std::chrono::steady_clock::now();
			t[c].push_back(std::chrono::duration<double, std::nano>(b - a).count());
		}
	}
	std::printf("wait %.1f ms %s, %d adds per chunk: median ns per chunk 1..%d:", wait_ms, busy ? "busy" : "sleep", n,
	            chunks);
	for (int c = 0; c < chunks; ++c)
	{
		std::sort(t[c].begin(), t[c].end());
		if (c < 8 || c % 8 == 7)
			std::printf(" [%d]%.0f", c + 1, t[c][t[c].size() / 2]);
	}
	std::printf(" (x=%llu)\n", (unsigned long long)(x & 1));
}
