#!/usr/bin/env python3
"""Emit an MLIR @main that checks @<loss>_grad against finite differences.

Reads the mp.loss function's signature from MODEL.mlir, builds deterministic
inputs (0.5 * sin(f * i + seed) over the linear index, f and seed
per argument), calls
@<loss>_grad and prints, for every mp.param argument in order, the
reverse-mode gradient and then the central finite difference
(L(p + eps) - L(p - eps)) / (2 eps) of every element, computed on an f64
copy of the loss so the reference is not limited by f32 rounding, each with
printMemrefF32. scripts/gradcheck.py compares the pairs.

@<loss>_grad must exist when @main is parsed, so the driver goes inside the
module that --mp-autodiff printed: --into that output.

Usage: mp-opt --mp-autodiff MODEL.mlir -o grad.mlir
       gen_gradcheck_main.py MODEL.mlir --into grad.mlir [--eps 1e-4] > check.mlir
Standard library only.
"""
import argparse
import re
import sys

SIGNATURE = re.compile(r"func\.func\s+@(\w+)\((.*?)\)\s*->\s*f32\s+attributes\s*\{[^}]*mp\.loss", re.S)
ARG = re.compile(r"%(\w+)\s*:\s*(tensor<([0-9x]*)x?f32>)(\s*\{[^}]*mp\.param\s*=\s*\"(\w+)\"[^}]*\})?")


def parse(text):
    match = SIGNATURE.search(text)
    if not match:
        sys.exit("error: no 'func.func @name(...) -> f32 attributes {mp.loss}' in the model")
    args = []
    for arg in ARG.finditer(match.group(2)):
        shape = [int(d) for d in arg.group(3).split("x") if d] if arg.group(3) else []
        # Prefixed so argument names cannot clash with the driver's values.
        args.append({"name": "arg_" + arg.group(1), "type": arg.group(2), "shape": shape,
                     "param": arg.group(5)})
    return match.group(1), args


def f64_copy(text, loss):
    """The loss function, renamed @<loss>_f64, computing in f64: finite
    differences need more precision than the f32 model has."""
    start = text.index(f"func.func @{loss}(")
    depth, end = 0, None
    body_open = re.compile(r"\{[ \t]*\n").search(text, text.index("->", start)).start()
    for i in range(body_open, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    body = text[start:end]
    # Inline the model's attribute aliases (#id = affine_map<...>): the
    # copy lands in a module printed with its own alias names.
    aliases = dict(re.findall(r"^(#\w+)\s*=\s*(.+?)\s*$", text, re.M))
    for alias in sorted(aliases, key=len, reverse=True):
        body = re.sub(re.escape(alias) + r"\b", aliases[alias], body)
    body = body.replace(f"@{loss}(", f"@{loss}_f64(", 1)
    body = re.sub(r"attributes\s*\{[^}]*mp\.loss[^}]*\}", "", body, count=1)
    body = re.sub(r"\{\s*mp\.param\s*=\s*\"\w+\"\s*\}", "", body)
    body = body.replace("0xFF800000", "0xFFF0000000000000").replace("0x7F800000", "0x7FF0000000000000")
    return body.replace("f32", "f64")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--into", required=True,
                        help="mp-opt output (one module) to add @main to")
    parser.add_argument("--eps", type=float, default=1e-4)
    options = parser.parse_args()
    text = open(options.model).read()
    loss, args = parse(text)
    out = []
    emit = out.append
    emit("func.func private @printMemrefF32(tensor<*xf32>)")
    emit("func.func @main() {")
    emit(f"  %eps = arith.constant {options.eps:e} : f64")
    emit(f"  %two_eps = arith.constant {2 * options.eps:e} : f64")
    for i, a in enumerate(args):
        rank = len(a["shape"])
        dims = ", ".join(f"d{k}" for k in range(rank))
        emit(f"  %e_{a['name']} = tensor.empty() : {a['type']}")
        iterators = ", ".join(['"parallel"'] * rank)
        emit(f"  %{a['name']} = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>],"
             f" iterator_types = [{iterators}]}}"
             f" outs(%e_{a['name']} : {a['type']}) {{")
        emit("  ^bb0(%out: f32):")
        # linear index -> 0.5 * sin(0.37 * idx + seed)
        emit("    %lin0 = arith.constant 0 : index")
        prev = "%lin0"
        for k, extent in enumerate(a["shape"]):
            emit(f"    %i{k} = linalg.index {k} : index")
            emit(f"    %n{k} = arith.constant {extent} : index")
            emit(f"    %m{k} = arith.muli {prev}, %n{k} : index")
            emit(f"    %lin{k + 1} = arith.addi %m{k}, %i{k} : index")
            prev = f"%lin{k + 1}"
        emit(f"    %ii = arith.index_cast {prev} : index to i32")
        emit("    %fi = arith.sitofp %ii : i32 to f32")
        emit(f"    %freq = arith.constant {0.7 + 0.3 * i:f} : f32")
        emit(f"    %seed = arith.constant {1.0 + 0.9 * i:f} : f32")
        emit("    %ph = arith.mulf %fi, %freq : f32")
        emit("    %ph2 = arith.addf %ph, %seed : f32")
        emit("    %s = math.sin %ph2 : f32")
        emit("    %half = arith.constant 0.5 : f32")
        emit("    %v = arith.mulf %s, %half : f32")
        emit("    linalg.yield %v : f32")
        emit(f"  }} -> {a['type']}")
        t64 = a["type"].replace("f32", "f64")
        emit(f"  %e64_{a['name']} = tensor.empty() : {t64}")
        emit(f"  %{a['name']}_64 = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>,"
             f" affine_map<({dims}) -> ({dims})>], iterator_types = [{iterators}]}}"
             f" ins(%{a['name']} : {a['type']}) outs(%e64_{a['name']} : {t64}) {{")
        emit("  ^bb0(%in: f32, %out: f64):")
        emit("    %wide = arith.extf %in : f32 to f64")
        emit("    linalg.yield %wide : f64")
        emit(f"  }} -> {t64}")
    names = ", ".join(f"%{a['name']}" for a in args)
    types = ", ".join(a["type"] for a in args)
    params = [a for a in args if a["param"]]
    grad_types = ", ".join(["f32"] + [a["type"] for a in params])
    grads = ", ".join(["%g_loss"] + [f"%g_{a['name']}" for a in params])
    emit(f"  {grads} = func.call @{loss}_grad({names}) : ({types}) -> ({grad_types})")
    for a in params:
        name, type_, shape = a["name"], a["type"], a["shape"]
        rank = len(shape)
        emit(f"  %u_{name} = tensor.cast %g_{name} : {type_} to tensor<*xf32>")
        emit(f"  func.call @printMemrefF32(%u_{name}) : (tensor<*xf32>) -> ()")
        # Central differences, element by element, in nested loops.
        emit(f"  %fd0_{name} = tensor.empty() : {type_}")
        emit("  %c0 = arith.constant 0 : index" if a is params[0] else "")
        emit("  %c1 = arith.constant 1 : index" if a is params[0] else "")
        carried = f"%fd0_{name}"
        idx = []
        for k, extent in enumerate(shape):
            emit(f"  %ub_{name}_{k} = arith.constant {extent} : index")
            emit(f"  %fd{k + 1}_{name} = scf.for %j_{name}_{k} = %c0 to %ub_{name}_{k} step %c1"
                 f" iter_args(%acc_{name}_{k} = {carried}) -> ({type_}) {{")
            carried = f"%acc_{name}_{k}"
            idx.append(f"%j_{name}_{k}")
        ix = ", ".join(idx)
        t64 = type_.replace("f32", "f64")
        types64 = ", ".join(b["type"].replace("f32", "f64") for b in args)
        emit(f"    %p_{name} = tensor.extract %{name}_64[{ix}] : {t64}")
        for sign, op in (("plus", "arith.addf"), ("minus", "arith.subf")):
            emit(f"    %pv_{sign}_{name} = {op} %p_{name}, %eps : f64")
            emit(f"    %pt_{sign}_{name} = tensor.insert %pv_{sign}_{name} into %{name}_64[{ix}] : {t64}")
            call_args = ", ".join(f"%pt_{sign}_{name}" if b is a else f"%{b['name']}_64" for b in args)
            emit(f"    %l_{sign}_{name} = func.call @{loss}_f64({call_args}) : ({types64}) -> f64")
        emit(f"    %dl_{name} = arith.subf %l_plus_{name}, %l_minus_{name} : f64")
        emit(f"    %fd64_{name} = arith.divf %dl_{name}, %two_eps : f64")
        emit(f"    %fd_{name} = arith.truncf %fd64_{name} : f64 to f32")
        emit(f"    %ins_{name} = tensor.insert %fd_{name} into {carried}[{ix}] : {type_}")
        result = f"%ins_{name}"
        for k in reversed(range(rank)):
            emit(f"    scf.yield {result} : {type_}")
            emit("  }")
            result = f"%fd{k + 1}_{name}"
        emit(f"  %v_{name} = tensor.cast {result} : {type_} to tensor<*xf32>")
        emit(f"  func.call @printMemrefF32(%v_{name}) : (tensor<*xf32>) -> ()")
    emit("  return")
    emit("}")
    module = open(options.into).read().rstrip()
    if not module.endswith("}"):
        sys.exit(f"error: {options.into} does not end with a module's closing brace")
    print(module[:-1] + f64_copy(text, loss) + "\n" +
          "\n".join(line for line in out if line) + "\n}")


if __name__ == "__main__":
    main()
