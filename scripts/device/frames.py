#!/usr/bin/env python3
"""Prints one line per frame of `quokka render --json` output: CPU update and encode, GPU and frame time, the heap's
update steps (those of 0.01 ms or more), and the device buffers the frame created. Device scripts only, not CI."""
import json
import sys

for path in sys.argv[1:]:
    j = json.load(open(path))
    for i, f in enumerate(j["per_frame"]):
        phases = f["heap_phases_ms"]
        steps = " ".join(f"{k} {v:.2f}" for k, v in phases.items() if isinstance(v, float) and v >= 0.01)
        parts = " ".join(f"{group}.{k} {v:.2f}" for group in ("refresh_parts", "upload_parts")
                         for k, v in phases.get(group, {}).items() if v >= 0.01)
        print(f"frame {i}: update {f['cpu_update_ms']:.2f} encode {f['cpu_encode_ms']:.3f} (heap {f['heap_encode_ms']:.3f})"
              f" gpu {f['gpu_ms']:.2f} frame {f['frame_ms']:.2f} | {steps} | {parts} | buffers created "
              f"{f.get('buffers_created', '?')} ({f.get('buffer_bytes_created', 0) / 2**20:.0f} MiB)")
