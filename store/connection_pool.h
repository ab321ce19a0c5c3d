#pragma once
// A fixed set of connections lent to one thread at a time: the store's read connections, so
// that a read never waits for the writer's commit (WAL lets them read the last committed state
// beside it), nor for another read while one is free.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace fabric_chaos::store::internal {

template <typename Connection>
class ConnectionPool {
 public:
  void add(std::unique_ptr<Connection> connection) {
    free_.push_back(connection.get());
    all_.push_back(std::move(connection));
  }
  bool empty() const { return all_.empty(); }

  // Runs f(*connection) on a free connection, waiting for one when all are busy.
  template <typename F>
  auto with(F&& f) -> decltype(f(std::declval<Connection&>())) {
    Connection* connection = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !free_.empty(); });
      connection = free_.back();
      free_.pop_back();
    }
    struct GiveBack {
      ConnectionPool* pool;
      Connection* connection;
      ~GiveBack() {
        {
          std::lock_guard lock(pool->mu_);
          pool->free_.push_back(connection);
        }
        pool->cv_.notify_one();
      }
    } give_back{this, connection};
    return f(*connection);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Connection*> free_;
  std::vector<std::unique_ptr<Connection>> all_;
};

}  // namespace fabric_chaos::store::internal
