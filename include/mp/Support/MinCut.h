//===- MinCut.h - s-t minimum cut (Dinic's max-flow) ------------*- C++ -*-===//
//
// The precision analysis places precision boundaries with an s-t minimum
// cut: source side = f32, sink side = low precision.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SUPPORT_MINCUT_H
#define MP_SUPPORT_MINCUT_H

#include <cstdint>
#include <limits>
#include <vector>

namespace mlir {
namespace mp {

class MinCut {
public:
  static constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

  /// Creates a graph with `source` = 0 and `sink` = 1.
  MinCut() : firstEdge(2, -1) {}
  static constexpr int kSource = 0;
  static constexpr int kSink = 1;

  int addNode();
  void addEdge(int from, int to, int64_t capacity);
  /// Computes the maximum flow; returns the cut's capacity.
  int64_t solve();
  /// After solve(): true if `node` is on the source side of a minimum cut.
  bool onSourceSide(int node) const { return reachable[node]; }

private:
  // Adjacency as linked lists in one array ("forward star"): no allocation
  // per node, which dominates on graphs of 100k ops.
  struct Edge {
    int to;
    int next; // next edge out of the same node, or -1
    int64_t capacity;
  };
  bool buildLevels();
  int64_t push(int node, int64_t limit);

  std::vector<Edge> edges;
  std::vector<int> firstEdge;
  std::vector<int> level, currentEdge;
  std::vector<bool> reachable;
};

} // namespace mp
} // namespace mlir

#endif // MP_SUPPORT_MINCUT_H
