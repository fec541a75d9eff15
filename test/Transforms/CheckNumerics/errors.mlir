// RUN: mp-opt %s --mp-check-numerics=functions=missing -verify-diagnostics

// expected-error @below {{mp-check-numerics: no function '@missing' to probe}}
module {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }
}
