//===- Bf16VectorMovesTest.cpp - bf16 vectors move as i16 vectors ---------===//
//
// moveBf16VectorsAsIntegers (JitEntry.h) turns loads and stores of bf16
// vectors into i16 ones, which the x86 code generator moves whole instead
// of one element at a time. Checked on the LLVM IR (no bf16 vector access
// left, the stored values taken from the i16 vectors they were cast from)
// and through the session's JIT on a strided copy and a select like the
// bf16 rounding's, bit for bit, NaN payloads included.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/JitEntry.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

// copy_rows(src, dst, n): the even rows of src (16 bf16 values each) into
// the first n rows of dst, then once more with negative values (sign bit
// set) replaced by +0 through a select, after dst's first n rows: the
// casts to i16 and back and the select are what the bf16 emulation makes.
const char *kModule = R"mlir(
llvm.func @copy_rows(%src: !llvm.ptr, %dst: !llvm.ptr, %n: i64) {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %c16 = llvm.mlir.constant(16 : i64) : i64
  %c32 = llvm.mlir.constant(32 : i64) : i64
  llvm.br ^loop(%zero : i64)
^loop(%r: i64):
  %more = llvm.icmp "slt" %r, %n : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %from = llvm.mul %r, %c32 : i64
  %to = llvm.mul %r, %c16 : i64
  %p = llvm.getelementptr %src[%from] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
  %q = llvm.getelementptr %dst[%to] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
  %v = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> vector<16xbf16>
  llvm.store %v, %q {alignment = 2 : i64} : vector<16xbf16>, !llvm.ptr
  %back = llvm.bitcast %v : vector<16xbf16> to vector<16xi16>
  %zeros = llvm.mlir.constant(dense<0> : vector<16xi16>) : vector<16xi16>
  %negative = llvm.icmp "slt" %back, %zeros : vector<16xi16>
  %again = llvm.bitcast %back : vector<16xi16> to vector<16xbf16>
  %plusZero = llvm.mlir.constant(dense<0.0> : vector<16xbf16>) : vector<16xbf16>
  %kept = llvm.select %negative, %plusZero, %again : vector<16xi1>, vector<16xbf16>
  %half = llvm.mul %n, %c16 : i64
  %q2 = llvm.getelementptr %q[%half] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
  llvm.store %kept, %q2 {alignment = 2 : i64} : vector<16xbf16>, !llvm.ptr
  %next = llvm.add %r, %one : i64
  llvm.br ^loop(%next : i64)
^done:
  llvm.return
}
)mlir";

mlir::OwningOpRef<mlir::ModuleOp> parseCopyRows(mlir::MLIRContext &context) {
  return mlir::parseSourceString<mlir::ModuleOp>(kModule, &context);
}

bool isBf16Vector(llvm::Type *type) {
  auto *vector = llvm::dyn_cast<llvm::VectorType>(type);
  return vector && vector->getElementType()->isBFloatTy();
}

TEST(Bf16VectorMoves, LeavesNoBf16VectorAccess) {
  std::unique_ptr<mlir::MLIRContext> context = mp::createSessionContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = parseCopyRows(*context);
  ASSERT_TRUE(module);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(*module, llvmContext);
  ASSERT_TRUE(llvmModule);
  auto count = [&](auto predicate) {
    unsigned n = 0;
    for (llvm::Function &f : *llvmModule)
      for (llvm::Instruction &i : llvm::instructions(f))
        n += predicate(i);
    return n;
  };
  auto bf16Access = [](llvm::Instruction &i) {
    if (llvm::isa<llvm::LoadInst, llvm::SelectInst>(&i))
      return isBf16Vector(i.getType());
    if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&i))
      return isBf16Vector(store->getValueOperand()->getType());
    return false;
  };
  ASSERT_EQ(count(bf16Access), 4u);

  mp::moveBf16VectorsAsIntegers(*llvmModule);
  EXPECT_FALSE(llvm::verifyModule(*llvmModule, &llvm::errs()));
  EXPECT_EQ(count(bf16Access), 0u);
  // One i16 load, stored as it is; one i16 select, stored as it is.
  auto isI16Vector = [](llvm::Type *type) {
    return type->isVectorTy() && type->getScalarType()->isIntegerTy(16);
  };
  llvm::LoadInst *load = nullptr;
  llvm::SelectInst *select = nullptr;
  std::vector<llvm::StoreInst *> stores;
  for (llvm::Instruction &i : llvm::instructions(*llvmModule->begin())) {
    if (auto *l = llvm::dyn_cast<llvm::LoadInst>(&i))
      load = l;
    if (auto *s = llvm::dyn_cast<llvm::SelectInst>(&i))
      select = s;
    if (auto *s = llvm::dyn_cast<llvm::StoreInst>(&i))
      stores.push_back(s);
  }
  ASSERT_TRUE(load && select);
  EXPECT_TRUE(isI16Vector(load->getType()));
  EXPECT_EQ(load->getAlign().value(), 2u);
  EXPECT_TRUE(isI16Vector(select->getType()));
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_EQ(stores[0]->getValueOperand(), load);
  EXPECT_EQ(stores[1]->getValueOperand(), select);
}

TEST(Bf16VectorMoves, CopiesBitForBitThroughTheJit) {
  std::unique_ptr<mlir::MLIRContext> context = mp::createSessionContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = parseCopyRows(*context);
  ASSERT_TRUE(module);
  std::string error;
  std::unique_ptr<mlir::ExecutionEngine> engine =
      mp::compileModule(*module, nullptr, error);
  ASSERT_TRUE(engine) << error;
  auto address = engine->lookup("copy_rows");
  ASSERT_TRUE(static_cast<bool>(address));
  auto copy = reinterpret_cast<void (*)(const uint16_t *, uint16_t *, int64_t)>(
      *address);
  constexpr int64_t rows = 5;
  std::vector<uint16_t> src(rows * 32), dst(rows * 32, 0);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<uint16_t>(0x3f80 + 7 * i);
  src[1] = 0x7f81;  // a signalling NaN's bits
  src[34] = 0xffc3; // a quiet NaN with a payload and the sign bit
  src[66] = 0x7fc5; // one without
  src[65] = 0x0001; // a subnormal
  copy(src.data(), dst.data(), rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < 16; ++e) {
      EXPECT_EQ(dst[r * 16 + e], src[r * 32 + e]) << r << "," << e;
      uint16_t value = src[r * 32 + e];
      EXPECT_EQ(dst[(rows + r) * 16 + e], value & 0x8000 ? 0 : value)
          << r << "," << e;
    }
}

} // namespace
