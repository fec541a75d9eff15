// RUN: not mp-opt %s --mp-split-reductions=per-thread=1 2>&1 | FileCheck %s

// CHECK: error: mp-split-reductions: per-thread must be at least 2, got 1
func.func @f() {
  return
}
