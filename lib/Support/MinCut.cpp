//===- MinCut.cpp - s-t minimum cut (Dinic's max-flow) --------------------===//

#include "mp/Support/MinCut.h"

#include <algorithm>
#include <deque>

using namespace mlir::mp;

int MinCut::addNode() {
  firstEdge.push_back(-1);
  return static_cast<int>(firstEdge.size()) - 1;
}

void MinCut::addEdge(int from, int to, int64_t capacity) {
  if (capacity <= 0 || from == to)
    return;
  // Edge i and its residual twin i ^ 1.
  edges.push_back({to, firstEdge[from], std::min(capacity, kInfinite)});
  firstEdge[from] = static_cast<int>(edges.size()) - 1;
  edges.push_back({from, firstEdge[to], 0});
  firstEdge[to] = static_cast<int>(edges.size()) - 1;
}

bool MinCut::buildLevels() {
  level.assign(firstEdge.size(), -1);
  std::deque<int> queue{kSource};
  level[kSource] = 0;
  while (!queue.empty()) {
    int node = queue.front();
    queue.pop_front();
    for (int e = firstEdge[node]; e >= 0; e = edges[e].next) {
      if (edges[e].capacity > 0 && level[edges[e].to] < 0) {
        level[edges[e].to] = level[node] + 1;
        queue.push_back(edges[e].to);
      }
    }
  }
  return level[kSink] >= 0;
}

// Iterative depth-first augmentation: graphs of 100k ops would overflow the
// stack with recursion.
int64_t MinCut::push(int start, int64_t limit) {
  struct Frame {
    int node;
    int viaEdge;
  };
  std::vector<Frame> path{{start, -1}};
  int64_t total = 0;
  while (!path.empty() && total < limit) {
    int node = path.back().node;
    if (node == kSink) {
      int64_t bottleneck = limit - total;
      for (size_t i = 1; i < path.size(); ++i)
        bottleneck = std::min(bottleneck, edges[path[i].viaEdge].capacity);
      for (size_t i = 1; i < path.size(); ++i) {
        edges[path[i].viaEdge].capacity -= bottleneck;
        edges[path[i].viaEdge ^ 1].capacity += bottleneck;
      }
      total += bottleneck;
      path.resize(1);
      continue;
    }
    bool advanced = false;
    for (int &e = currentEdge[node]; e >= 0; e = edges[e].next) {
      if (edges[e].capacity > 0 && level[edges[e].to] == level[node] + 1) {
        path.push_back({edges[e].to, e});
        advanced = true;
        break;
      }
    }
    if (!advanced) {
      level[node] = -1; // dead end for this phase
      path.pop_back();
      if (!path.empty()) {
        int &e = currentEdge[path.back().node];
        e = edges[e].next;
      }
    }
  }
  return total;
}

int64_t MinCut::solve() {
  int64_t flow = 0;
  while (buildLevels()) {
    currentEdge = firstEdge;
    flow += push(kSource, kInfinite);
  }
  // Source side of the minimum cut: reachable in the residual graph.
  reachable.assign(firstEdge.size(), false);
  std::deque<int> queue{kSource};
  reachable[kSource] = true;
  while (!queue.empty()) {
    int node = queue.front();
    queue.pop_front();
    for (int e = firstEdge[node]; e >= 0; e = edges[e].next)
      if (edges[e].capacity > 0 && !reachable[edges[e].to]) {
        reachable[edges[e].to] = true;
        queue.push_back(edges[e].to);
      }
  }
  return flow;
}
