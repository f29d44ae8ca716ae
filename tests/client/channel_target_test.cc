// How `--server` becomes one gRPC channel target: a single target as given, a list of
// host:port as one ipv4:/ipv6: target that round_robin balances (and one target per
// listed address).
#include <string>
#include <vector>

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

// A list also gives one single-address target per server, in list order (the client sends
// part i of a split request to the i-th); one entry gives none.
TEST(ChannelTargetTest, AListAlsoGivesOneTargetPerAddressInListOrder) {
  absl::StatusOr<ServerTargets> v4 = ResolveServerTargets({"127.0.0.2:2", "127.0.0.1:1"});
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->balanced, "ipv4:127.0.0.2:2,127.0.0.1:1");
  EXPECT_EQ(v4->addresses, (std::vector<std::string>{"ipv4:127.0.0.2:2", "ipv4:127.0.0.1:1"}));
  absl::StatusOr<ServerTargets> v6 = ResolveServerTargets({"[::1]:7", "[::1]:8"});
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->addresses, (std::vector<std::string>{"ipv6:[::1]:7", "ipv6:[::1]:8"}));
  EXPECT_TRUE(ResolveServerTargets({"127.0.0.1:1"})->addresses.empty());
  EXPECT_TRUE(ResolveServerTargets({"dns:///hgeval:50051"})->addresses.empty());
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
