#pragma once

/// The stage actor: runs one stage of one pipeline through its schedule, an action at
/// a time, as the inputs each action needs arrive.

#include "injected_failure.hpp"
#include "protocol.hpp"
#include "stage_activity.hpp"
#include "stage_trace.hpp"

#include "device/emulated_device.hpp"

#include <actorpipe/schedule.hpp>
#include <actorpipe/simulator.hpp>

#include <caf/fwd.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace actorpipe::train {
class StageComputation;
}

namespace actorpipe::actors {

class DeviceTurns;

struct StageConfig {
  train::StageComputation* computation = nullptr;
  std::vector<Action> actions; ///< this stage's part of the schedule, every step
  /// With chunks: the turns this virtual stage takes with its device's other chunks.
  /// None: the device runs this stage alone.
  std::shared_ptr<DeviceTurns> turns;
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  std::size_t stages = 1;
  std::uint64_t first_step = 1; ///< the run's number of the first step (> 1 after a resume)
  /// train.clip_norm: before it steps, the stage sends its part of the gradient's norm to
  /// its pipeline and waits for the whole, which its computation clips by.
  bool clipping = false;
  StageTrace* trace = nullptr;       ///< none: no spans are recorded
  StageActivity* activity = nullptr; ///< set while the actor works; none: nobody watches
  Clock::time_point origin;
  std::optional<InjectedFailure> inject_failure;
  /// A core shared with the pipeline neighbours (more stage actors than cores): the
  /// actor's thread is bound to it and, after each send, yields it to the neighbour that
  /// waits for exactly that message before going on (to its optimizer step, say), so a
  /// hand-off is a switch on one core. None: the operating system places the thread.
  std::optional<int> core;
  /// On an emulated device: what its actions take there (the stage's figures over the
  /// device's speed), each padded to that times the dilation of wall time, and when
  /// what it sends arrives (device/emulated_device.hpp). None: actions take what they
  /// take and messages go at once.
  using Emulated = device::EmulatedDevice::Model;
  std::optional<Emulated> emulated;
  /// Lockstep rounds (JobConfig::step_ahead): called with the step before this replica
  /// arrives at its round; true when it stepped the replica. Unset: never.
  std::function<bool(std::uint64_t step)> step_ahead;
  /// Scheduled averaging (train::SyncExecutor in a run): keeps this replica's snapshot
  /// as it asks, and adds the change its group's averager made of it. Unset: nothing
  /// to keep or add.
  std::function<void()> snapshot;
  std::function<void()> correct;
  /// GroupScheduling::overlap: compute the next step while the group averages.
  bool overlap = true;
  /// Asynchronous elastic averaging (with an averager in the links): the stage asks
  /// its averager every this many of its steps.
  std::uint64_t period = 1;
  /// Takes in the tensors that come from stages in other processes (StageLinks' routes
  /// name it); none in a run of one process.
  transport::TensorTransport* transport = nullptr;
  /// Makes the rows of a batch that parcels from the coordinator name (a worker's own
  /// data); none in a run of one process.
  RowMaker make_rows;
  /// A thread of its own (it computes), bound to `core` on its first message; false
  /// leaves it to the scheduler, as the deterministic protocol tests need.
  bool detached = true;
};

/// Expects a `connect` message with its links before any input. Its links' `step_end`
/// (the run's sync mode, sync_mode.hpp) says how each step ends:
///   Alone: its optimizer step (under clipping, once its pipeline has said the norm of
///     the model's gradient, as before every optimizer step it takes itself);
///   ReplicaRound: its replicas' round (ReplicaBarrier), the sync policy's reduction
///     before its optimizer steps, or its own optimizer step (step_ahead) before a round
///     that averages the replicas;
///   GroupAsk, ElasticAsk: its optimizer step, a snapshot, an ask (every step to the
///     group scheduler, every period to its averager) and the step's report; the answer
///     comes while the stage computes its next step, whose actions' end waits for it.
///     The change is added then, or at once when the answer finds the stage between
///     steps;
///   ServerPush: a push to its parameter server, whose weights come back.
stage_actor spawn_stage(caf::actor_system& system, StageConfig config);

} // namespace actorpipe::actors
