#include "agent/registration_client.h"

#include <algorithm>

#include "core/log.h"

namespace fabric_chaos::agent {

std::vector<NetdevInfo> registrationNics(const std::vector<NetdevInfo>& netdevs,
                                         const std::vector<std::string>& allowed,
                                         const std::vector<std::string>& management) {
  auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<NetdevInfo> out;
  for (const NetdevInfo& dev : netdevs) {
    if (listed(management, dev.name)) continue;
    if (!allowed.empty() ? !listed(allowed, dev.name) : (dev.name == "lo" || dev.address.empty())) {
      continue;
    }
    out.push_back(dev);
  }
  return out;
}

RegistrationClient::RegistrationClient(RegistrationClientOptions options)
    : options_(std::move(options)),
      client_(options_.controller_url, options_.timeout_ms, options_.tls) {
  thread_ = std::thread([this] { loop(); });
}

RegistrationClient::~RegistrationClient() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool RegistrationClient::registerOnce(std::string* problem) {
  if (!client_.status().isOk()) {
    *problem = client_.status().message();
    return false;
  }
  core::HttpRequest request;
  request.method = "POST";
  request.target = "/v1/agents/register";
  request.headers["Authorization"] = "Bearer " + options_.token;
  request.body = options_.registration.dump();
  auto response = client_.send(request);
  if (!response.isOk()) {
    *problem = response.status().message();
    return false;
  }
  if (response->status != 200) {
    const auto body = nlohmann::json::parse(response->body, nullptr, false);
    *problem =
        "HTTP " + std::to_string(response->status) + ": " +
        (body.is_object() && body.contains("error") ? body["error"].value("message", response->body)
                                                    : response->body);
    return false;
  }
  return true;
}

void RegistrationClient::loop() {
  std::string last_problem;
  for (;;) {
    std::string problem;
    if (registerOnce(&problem)) {
      if (successes_++ == 0 || !last_problem.empty()) {
        core::logInfo("agent: registered with " + options_.controller_url + " as " +
                      options_.registration.value("host", "") + " in fabric " +
                      options_.registration.value("fabric", "registered"));
      }
      last_problem.clear();
    } else if (problem != last_problem) {
      core::logWarn("agent: cannot register with " + options_.controller_url + ": " + problem +
                    " (retrying every " + std::to_string(options_.interval_ms / 1000) + " s)");
      last_problem = problem;
    }
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                       [this] { return stopping_; })) {
      return;
    }
  }
}

}  // namespace fabric_chaos::agent
