//===- MinCutTest.cpp - s-t minimum cut used for boundary placement -------===//

#include "mp/Support/MinCut.h"

#include <gtest/gtest.h>

using mlir::mp::MinCut;

namespace {

TEST(MinCut, SingleEdge) {
  MinCut graph;
  graph.addEdge(MinCut::kSource, MinCut::kSink, 7);
  EXPECT_EQ(graph.solve(), 7);
}

TEST(MinCut, ChainCutsAtCheapestEdge) {
  // source -10-> a -3-> b -5-> sink: the cut is a -> b.
  MinCut graph;
  int a = graph.addNode(), b = graph.addNode();
  graph.addEdge(MinCut::kSource, a, 10);
  graph.addEdge(a, b, 3);
  graph.addEdge(b, MinCut::kSink, 5);
  EXPECT_EQ(graph.solve(), 3);
  EXPECT_TRUE(graph.onSourceSide(a));
  EXPECT_FALSE(graph.onSourceSide(b));
}

TEST(MinCut, ParallelPathsAddUp) {
  MinCut graph;
  int a = graph.addNode(), b = graph.addNode();
  graph.addEdge(MinCut::kSource, a, 4);
  graph.addEdge(a, MinCut::kSink, 2);
  graph.addEdge(MinCut::kSource, b, 1);
  graph.addEdge(b, MinCut::kSink, 6);
  graph.addEdge(a, b, 5);
  // Paths: s-a-t (2), s-b-t (1), s-a-b-t (2): max flow 5.
  EXPECT_EQ(graph.solve(), 5);
}

TEST(MinCut, InfiniteEdgesAreNeverCut) {
  // A node tied to the source by an infinite edge stays on the source side
  // even when that makes the cut dearer.
  MinCut graph;
  int fixedHigh = graph.addNode(), free = graph.addNode();
  graph.addEdge(MinCut::kSource, fixedHigh, MinCut::kInfinite);
  graph.addEdge(fixedHigh, free, 8);
  graph.addEdge(free, MinCut::kSink, 3);
  EXPECT_EQ(graph.solve(), 3);
  EXPECT_TRUE(graph.onSourceSide(fixedHigh));
  EXPECT_TRUE(graph.onSourceSide(free));
}

TEST(MinCut, ZeroAndSelfEdgesAreIgnored) {
  MinCut graph;
  int a = graph.addNode();
  graph.addEdge(a, a, 5);
  graph.addEdge(MinCut::kSource, a, 0);
  EXPECT_EQ(graph.solve(), 0);
  EXPECT_FALSE(graph.onSourceSide(a));
}

TEST(MinCut, LongChainDoesNotOverflowTheStack) {
  // 200k nodes in a chain: the augmenting search must not recurse.
  MinCut graph;
  int previous = MinCut::kSource;
  for (int i = 0; i < 200000; ++i) {
    int node = graph.addNode();
    graph.addEdge(previous, node, i == 123456 ? 2 : 9);
    previous = node;
  }
  graph.addEdge(previous, MinCut::kSink, 9);
  EXPECT_EQ(graph.solve(), 2);
}

} // namespace
