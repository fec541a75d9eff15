//===- IRUtils.cpp - small IR helpers the passes share --------------------===//

#include "mp/Support/IRUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace mp {

std::string locationText(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto name = dyn_cast<NameLoc>(loc)) {
    os << name.getName().getValue();
    if (!isa<UnknownLoc>(name.getChildLoc()))
      os << " at " << locationText(name.getChildLoc());
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (!isa<UnknownLoc>(inner))
        return locationText(inner);
    loc.print(os);
  } else if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
    return locationText(callSite.getCallee());
  } else {
    loc.print(os);
  }
  return text;
}

std::string fileLocationText(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return fileLocationText(name.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string text = fileLocationText(inner); !text.empty())
        return text;
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return fileLocationText(callSite.getCallee());
  return "";
}

/// "FILE:LINE:COL" split into FILE and ":LINE:COL" ("" and all of it for
/// "LINE:COL").
static std::pair<StringRef, StringRef> splitLocation(StringRef at) {
  size_t col = at.rfind(':');
  size_t line = col == StringRef::npos ? col : at.rfind(':', col - 1);
  if (line == StringRef::npos)
    return {"", at};
  return {at.take_front(line), at.drop_front(line)};
}

/// Whether the location text `here` is `wanted` (see opsAtLocation).
static bool sameLocation(StringRef here, StringRef wanted) {
  if (here == wanted)
    return true;
  if (wanted.count(':') == 1) // LINE:COL, any file
    return here.ends_with(wanted) &&
           here.drop_back(wanted.size()).ends_with(":");
  auto [wantedFile, wantedLineCol] = splitLocation(wanted);
  auto [file, lineCol] = splitLocation(here);
  return lineCol == wantedLineCol &&
         llvm::sys::fs::equivalent(file, wantedFile);
}

/// The names of the name locations in `loc`, outermost first.
static void collectNames(Location loc, SmallVectorImpl<StringRef> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().getValue());
    collectNames(name.getChildLoc(), names);
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      collectNames(inner, names);
  } else if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
    collectNames(callSite.getCallee(), names);
  }
}

/// The first file location in `loc` that has a line.
static FileLineColLoc firstLineLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getLine() != 0 ? file : FileLineColLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    return firstLineLocation(name.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (FileLineColLoc file = firstLineLocation(inner))
        return file;
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return firstLineLocation(callSite.getCallee());
  return {};
}

std::string keepF32Location(Location loc) {
  if (FileLineColLoc file = firstLineLocation(loc))
    return fileLocationText(file);
  SmallVector<StringRef> names;
  collectNames(loc, names);
  if (!names.empty())
    return names.front().str();
  return fileLocationText(loc);
}

/// Whether `name` is the module path `wanted` or a path inside it.
static bool inModule(StringRef name, StringRef wanted) {
  return name.starts_with(wanted) &&
         (name.size() == wanted.size() || name[wanted.size()] == '.');
}

/// Whether an op at `loc` stands at `wanted` (see opsAtLocation).
static bool standsAt(Location loc, StringRef wanted) {
  std::string file = fileLocationText(loc);
  if (!file.empty() && sameLocation(file, wanted))
    return true;
  SmallVector<StringRef> names;
  collectNames(loc, names);
  if (llvm::any_of(names, [&](StringRef name) { return inModule(name, wanted); }))
    return true;
  auto [name, at] = wanted.split(" at ");
  return !at.empty() && !file.empty() && llvm::is_contained(names, name) &&
         sameLocation(file, at);
}

std::vector<Operation *> opsAtLocation(Operation *root, StringRef wanted) {
  std::vector<Operation *> found;
  if (wanted.empty())
    return found;
  root->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::IsTerminator>() || op->getNumResults() == 0)
      return;
    if (standsAt(op->getLoc(), wanted))
      found.push_back(op);
  });
  return found;
}

Value convertFloatScalar(OpBuilder &b, Location loc, Value value, Type type) {
  Type from = value.getType();
  if (from == type)
    return value;
  if (type.getIntOrFloatBitWidth() > from.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, type, value);
  if (type.getIntOrFloatBitWidth() < from.getIntOrFloatBitWidth())
    return arith::TruncFOp::create(b, loc, type, value);
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
  return arith::TruncFOp::create(b, loc, type, wide);
}

bool rebuildNamedLinalgBody(OpBuilder &b, Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  auto regionBuilder = linalgOp ? linalgOp.getRegionBuilder() : nullptr;
  if (!regionBuilder)
    return false;
  Region &region = op->getRegion(0);
  region.getBlocks().clear();
  SmallVector<Type> argTypes;
  SmallVector<Location> locs;
  for (Value v : op->getOperands()) {
    argTypes.push_back(getElementTypeOrSelf(v.getType()));
    locs.push_back(op->getLoc());
  }
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(&region, {}, argTypes, locs);
  ImplicitLocOpBuilder ib(op->getLoc(), b);
  ib.setInsertionPointToStart(block);
  regionBuilder(ib, *block, op->getAttrDictionary().getValue(),
                [&]() { return op->emitError(); });
  return true;
}

Value mapElements(OpBuilder &b, Location loc, Value input,
                  Type resultElementType,
                  function_ref<Value(OpBuilder &, Location, Value)> fn) {
  unsigned rank = cast<RankedTensorType>(input.getType()).getRank();
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, input), resultElementType);
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{input}, ValueRange{init},
      ArrayRef<AffineMap>{identity, identity}, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, fn(nb, nloc, args[0]));
      });
  return generic.getResult(0);
}

Value alignedAddress(OpBuilder &b, Location loc, Value memref) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, meta.getBaseBuffer());
  unsigned bytes =
      cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  Value offset = arith::MulIOp::create(
      b, loc, meta.getOffset(), arith::ConstantIndexOp::create(b, loc, bytes));
  return arith::AddIOp::create(b, loc, base, offset);
}

Value viewedBuffer(Value memref) {
  while (true) {
    if (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
      memref = view.getViewSource();
    // A transpose is a view too, though not a ViewLikeOpInterface.
    else if (auto transpose = memref.getDefiningOp<memref::TransposeOp>())
      memref = transpose.getIn();
    else
      return memref;
  }
}

bool isAllocation(Value buffer) {
  return buffer.getDefiningOp<memref::AllocOp>() ||
         buffer.getDefiningOp<memref::AllocaOp>();
}

bool mayShareMemory(Value a, Value b) {
  Value rootA = viewedBuffer(a), rootB = viewedBuffer(b);
  return rootA == rootB || (!isAllocation(rootA) && !isAllocation(rootB));
}

bool isFloatConversion(Operation *op) {
  return isa<arith::ExtFOp, arith::TruncFOp>(op);
}

bool isCastGeneric(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = generic.getRegion().front();
  for (Operation &inner : body.without_terminator())
    if (!isFloatConversion(&inner))
      return false;
  return !body.without_terminator().empty();
}

bool isWholeTruncation(linalg::GenericOp generic) {
  if (!isCastGeneric(generic) || generic.getNumResults() != 1 ||
      !generic.hasPureTensorSemantics())
    return false;
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2)
    return false;
  auto trunc = dyn_cast<arith::TruncFOp>(&body.front());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return trunc && trunc.getIn() == body.getArgument(0) &&
         yield.getNumOperands() == 1 && yield.getOperand(0) == trunc;
}

} // namespace mp
} // namespace mlir
