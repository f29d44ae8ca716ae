// The deployment recipes are checked the way a schema check would (kubectl is not
// available): every Kubernetes manifest parses (libyaml), has apiVersion/kind/name, and the
// fleet's wiring holds (GPU per server replica, headless Service selecting the servers,
// the servers' store pointing at the PostgreSQL Service, the Job's client on the headless
// Service's DNS name with round_robin). The Slurm script passes `bash -n` and starts one
// server per GPU plus a client; the image recipe uses Debian packages only; the README
// carries the commands.
#include <yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using hgeval::testing::SourcePath;

// A parsed YAML value: scalar, sequence or mapping.
struct Yaml {
  std::string scalar;
  std::vector<Yaml> items;
  std::vector<std::pair<std::string, Yaml>> fields;
  bool is_map = false;
  bool is_seq = false;

  // The field `key` of a mapping (an empty value when absent).
  const Yaml& operator[](const std::string& key) const {
    static const Yaml kEmpty;
    for (const auto& [k, v] : fields) {
      if (k == key) return v;
    }
    return kEmpty;
  }
  bool has(const std::string& key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return true;
    }
    return false;
  }
};

Yaml Convert(yaml_document_t* doc, yaml_node_t* node) {
  Yaml out;
  if (node == nullptr) return out;
  switch (node->type) {
    case YAML_SCALAR_NODE:
      out.scalar.assign(reinterpret_cast<const char*>(node->data.scalar.value),
                        node->data.scalar.length);
      break;
    case YAML_SEQUENCE_NODE:
      out.is_seq = true;
      for (yaml_node_item_t* i = node->data.sequence.items.start; i < node->data.sequence.items.top;
           ++i) {
        out.items.push_back(Convert(doc, yaml_document_get_node(doc, *i)));
      }
      break;
    case YAML_MAPPING_NODE:
      out.is_map = true;
      for (yaml_node_pair_t* p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
           ++p) {
        out.fields.push_back({Convert(doc, yaml_document_get_node(doc, p->key)).scalar,
                              Convert(doc, yaml_document_get_node(doc, p->value))});
      }
      break;
    default:
      break;
  }
  return out;
}

// Every document of a YAML file; a parse error fails the test with its position.
std::vector<Yaml> LoadYaml(const std::string& path) {
  std::vector<Yaml> docs;
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    ADD_FAILURE() << "cannot open " << path;
    return docs;
  }
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, file);
  for (;;) {
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
      ADD_FAILURE() << path << ": " << (parser.problem ? parser.problem : "parse error")
                    << " at line " << parser.problem_mark.line + 1;
      break;
    }
    yaml_node_t* root = yaml_document_get_root_node(&doc);
    if (root == nullptr) {
      yaml_document_delete(&doc);
      break;
    }
    docs.push_back(Convert(&doc, root));
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&parser);
  std::fclose(file);
  return docs;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// All manifests of deploy/kubernetes, by kind/name.
std::map<std::string, Yaml> Manifests() {
  std::map<std::string, Yaml> out;
  for (const auto& entry : std::filesystem::directory_iterator(SourcePath("deploy/kubernetes"))) {
    if (entry.path().extension() != ".yaml") continue;
    for (Yaml& doc : LoadYaml(entry.path().string())) {
      EXPECT_FALSE(doc["apiVersion"].scalar.empty()) << entry.path();
      EXPECT_FALSE(doc["kind"].scalar.empty()) << entry.path();
      EXPECT_FALSE(doc["metadata"]["name"].scalar.empty()) << entry.path();
      out[doc["kind"].scalar + "/" + doc["metadata"]["name"].scalar] = std::move(doc);
    }
  }
  return out;
}

bool HasArg(const Yaml& args, const std::string& prefix) {
  for (const Yaml& a : args.items) {
    if (absl::StartsWith(a.scalar, prefix)) return true;
  }
  return false;
}

// A workload's selector picks its own pods.
void ExpectSelectorMatchesTemplate(const Yaml& workload) {
  const Yaml& match = workload["spec"]["selector"]["matchLabels"];
  const Yaml& labels = workload["spec"]["template"]["metadata"]["labels"];
  ASSERT_TRUE(match.is_map) << workload["metadata"]["name"].scalar;
  for (const auto& [k, v] : match.fields) EXPECT_EQ(labels[k].scalar, v.scalar) << k;
}

TEST(DeployRecipesTest, KubernetesServersHaveOneGpuEachAndShareThePostgresStore) {
  const std::map<std::string, Yaml> m = Manifests();
  ASSERT_TRUE(m.contains("StatefulSet/hgeval-server"));
  const Yaml& servers = m.at("StatefulSet/hgeval-server");
  EXPECT_EQ(servers["apiVersion"].scalar, "apps/v1");
  ExpectSelectorMatchesTemplate(servers);
  const Yaml& containers = servers["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(containers.items.size(), 1u);
  const Yaml& server = containers.items[0];
  EXPECT_EQ(server["resources"]["limits"]["nvidia.com/gpu"].scalar, "1");
  EXPECT_TRUE(HasArg(server["args"], "--device=cuda"));
  EXPECT_TRUE(HasArg(server["args"], "--listen=0.0.0.0:50051"));
  EXPECT_TRUE(HasArg(server["args"], "--replica=$(POD_NAME)"));
  EXPECT_TRUE(HasArg(server["args"], "--store=postgresql://hgeval@hgeval-postgres:5432/"));
  EXPECT_EQ(server["readinessProbe"]["grpc"]["port"].scalar, "50051");
  bool password_from_secret = false;
  for (const Yaml& env : server["env"].items) {
    if (env["name"].scalar == "PGPASSWORD") {
      password_from_secret = env["valueFrom"]["secretKeyRef"]["name"].scalar == "hgeval-postgres";
    }
  }
  EXPECT_TRUE(password_from_secret);

  // The headless Service: DNS returns every replica, for the client's round_robin.
  const std::string headless = "Service/" + servers["spec"]["serviceName"].scalar;
  ASSERT_TRUE(m.contains(headless)) << headless;
  const Yaml& service = m.at(headless);
  EXPECT_EQ(service["spec"]["clusterIP"].scalar, "None");
  const Yaml& pod_labels = servers["spec"]["template"]["metadata"]["labels"];
  for (const auto& [k, v] : service["spec"]["selector"].fields) {
    EXPECT_EQ(pod_labels[k].scalar, v.scalar) << k;
  }
  EXPECT_EQ(service["spec"]["ports"].items.at(0)["port"].scalar, "50051");

  // The store the servers point at.
  ASSERT_TRUE(m.contains("Service/hgeval-postgres"));
  EXPECT_EQ(m.at("Service/hgeval-postgres")["spec"]["ports"].items.at(0)["port"].scalar, "5432");
  ASSERT_TRUE(m.contains("StatefulSet/hgeval-postgres"));
  ExpectSelectorMatchesTemplate(m.at("StatefulSet/hgeval-postgres"));
  ASSERT_TRUE(m.contains("Secret/hgeval-postgres"));
}

TEST(DeployRecipesTest, KubernetesJobRunsTheClientOnTheHeadlessServiceName) {
  const std::map<std::string, Yaml> m = Manifests();
  ASSERT_TRUE(m.contains("Job/hgeval-eval"));
  const Yaml& job = m.at("Job/hgeval-eval");
  EXPECT_EQ(job["apiVersion"].scalar, "batch/v1");
  const Yaml& pod = job["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["restartPolicy"].scalar == "OnFailure" || pod["restartPolicy"].scalar == "Never");
  const Yaml& client = pod["containers"].items.at(0);
  EXPECT_EQ(client["command"].items.at(0).scalar, "hgeval");
  EXPECT_EQ(client["args"].items.at(0).scalar, "run");
  EXPECT_TRUE(HasArg(client["args"], "--server=dns:///hgeval-server:50051"));
  EXPECT_TRUE(HasArg(client["args"], "--tasks="));
  EXPECT_TRUE(HasArg(client["args"], "--model="));
}

TEST(DeployRecipesTest, SlurmScriptStartsAServerPerGpuAndAClient) {
  const std::string path = SourcePath("deploy/slurm/hgeval-fleet.sbatch");
  EXPECT_EQ(std::system(absl::StrCat("bash -n '", path, "'").c_str()), 0);
  const std::string script = ReadText(path);
  EXPECT_NE(script.find("#SBATCH --gpus-per-node="), std::string::npos);
  EXPECT_NE(script.find("CUDA_VISIBLE_DEVICES=${GPUS[$i]}"), std::string::npos);
  EXPECT_NE(script.find("--device=cuda"), std::string::npos);
  EXPECT_NE(script.find("--store=\"$HGEVAL_STORE\""), std::string::npos);
  EXPECT_NE(script.find("postgresql://"), std::string::npos);
  EXPECT_NE(script.find("hgeval\" run --server=\"$SERVER_LIST\""), std::string::npos);
}

TEST(DeployRecipesTest, ImageIsBuiltFromDebianPackagesOnly) {
  const std::string recipe = ReadText(SourcePath("docker/Containerfile"));
  ASSERT_FALSE(recipe.empty());
  EXPECT_NE(recipe.find("FROM debian:"), std::string::npos);
  EXPECT_NE(recipe.find("scripts/install_deps.sh"), std::string::npos);
  EXPECT_NE(recipe.find("libpq5"), std::string::npos);
  for (const char* download : {"curl ", "wget ", "pip ", "pip3 ", "ADD http"}) {
    EXPECT_EQ(recipe.find(download), std::string::npos) << download;
  }
}

TEST(DeployRecipesTest, TheReadmeCarriesTheRecipesCommands) {
  const std::string readme = ReadText(SourcePath("README.md"));
  for (const char* command :
       {"docker build -f docker/Containerfile", "kubectl apply -f deploy/kubernetes/servers.yaml",
        "kubectl apply -f deploy/kubernetes/eval-job.yaml",
        "sbatch deploy/slurm/hgeval-fleet.sbatch", "--store=postgresql://"}) {
    EXPECT_NE(readme.find(command), std::string::npos) << command;
  }
}

}  // namespace
}  // namespace hgeval
