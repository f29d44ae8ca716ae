// How `--server` becomes one gRPC channel target: a single target as given, a list of
// host:port as one ipv4:/ipv6: target that round_robin balances.
#include "client/client.h"
#include "gtest/gtest.h"

namespace hgeval::client {
namespace {

TEST(ChannelTargetTest, OneServerOrTargetIsUsedAsGiven) {
  EXPECT_EQ(*ChannelTarget({"127.0.0.1:50051"}), "127.0.0.1:50051");
  EXPECT_EQ(*ChannelTarget({"dns:///hgeval.default.svc.cluster.local:50051"}),
            "dns:///hgeval.default.svc.cluster.local:50051");
}

TEST(ChannelTargetTest, AListBecomesOneBalancedTarget) {
  EXPECT_EQ(*ChannelTarget({"127.0.0.1:1", "127.0.0.2:2"}), "ipv4:127.0.0.1:1,127.0.0.2:2");
  EXPECT_EQ(*ChannelTarget({"localhost:7", "127.0.0.1:8"}), "ipv4:127.0.0.1:7,127.0.0.1:8");
  EXPECT_EQ(*ChannelTarget({"[::1]:7", "[::1]:8"}), "ipv6:[::1]:7,[::1]:8");
}

TEST(ChannelTargetTest, BadListsAreRefusedWithTheReason) {
  EXPECT_EQ(ChannelTarget({}).status().code(), absl::StatusCode::kInvalidArgument);
  auto scheme = ChannelTarget({"dns:///a:1", "127.0.0.1:2"});
  EXPECT_EQ(scheme.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(scheme.status().message().find("goes alone"), std::string::npos);
  EXPECT_EQ(ChannelTarget({"127.0.0.1", "127.0.0.1:2"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChannelTarget({"127.0.0.1:1", "[::1]:2"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChannelTarget({"no-such-host.invalid:1", "127.0.0.1:2"}).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hgeval::client
