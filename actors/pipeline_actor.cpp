/// Pipeline actor: one step of one pipeline.

#include "pipeline_actor.hpp"

#include <caf/all.hpp>

#include <map>

namespace actorpipe::actors {

namespace {

/// A step fed to the stages and not yet answered; the next one may be fed while this
/// one runs.
struct Pending {
  caf::typed_response_promise<double> reply;
  std::size_t done = 0; ///< stages that have stepped
  double loss_sum = 0;
};

struct PipelineState {
  std::vector<stage_actor> stages;
  std::vector<std::uint32_t> sizes;
  std::uint32_t batch_size = 0;
  std::uint32_t share = 0; ///< samples of this pipeline per batch
  std::uint64_t next = 1;  ///< the number of its next step
  std::map<std::uint64_t, Pending> steps;
  Route to_first, to_last;
  static inline const char* name = "pipeline";
};

pipeline_actor::behavior_type pipeline_behavior(pipeline_actor::stateful_pointer<PipelineState> self,
                                                std::vector<stage_actor> stages, std::vector<std::uint32_t> sizes,
                                                std::uint32_t batch_size, std::uint64_t first_step, Route to_first,
                                                Route to_last) {
  auto& st = self->state;
  st.next = first_step;
  st.to_first = to_first;
  st.to_last = to_last;
  st.stages = std::move(stages);
  st.sizes = std::move(sizes);
  st.batch_size = batch_size;
  for (auto n : st.sizes)
    st.share += n;
  return {
      [=](step_atom, std::uint64_t, train::Payload& inputs, train::Payload& labels) -> caf::result<double> {
        auto& st = self->state;
        // Its own count: with an asynchronous policy a pipeline gets some of the run's
        // steps, not each; with a lockstep one both counts agree.
        const std::uint64_t step = st.next++;
        Pending& pending = st.steps[step];
        pending.reply = self->make_response_promise<double>();
        const auto input_parts = train::split_rows(inputs, st.sizes);
        const auto label_parts = train::split_rows(labels, st.sizes);
        const stage_actor& first = st.stages.front();
        const stage_actor& last = st.stages.back();
        for (std::size_t m = 0; m < st.sizes.size(); ++m) {
          // The micro-batch's mean loss × its share of the whole batch: the gradients
          // of all micro-batches of all pipelines then sum to the batch mean's.
          const double scale = static_cast<double>(st.sizes[m]) / st.batch_size;
          self->send(last, labels_atom::value, step, static_cast<std::uint64_t>(m), pack(label_parts[m], st.to_last),
                     scale);
          self->send(first, forward_atom::value, step, static_cast<std::uint64_t>(m),
                     pack(input_parts[m], st.to_first));
        }
        return pending.reply;
      },
      [=](done_atom, std::uint64_t step, std::uint64_t, double loss_sum) {
        auto& st = self->state;
        const auto it = st.steps.find(step);
        if (it == st.steps.end()) return;
        it->second.loss_sum += loss_sum;
        if (++it->second.done < st.stages.size()) return;
        it->second.reply.deliver(it->second.loss_sum / st.share);
        st.steps.erase(it);
      },
  };
}

} // namespace

pipeline_actor spawn_pipeline(caf::actor_system& system, std::vector<stage_actor> stages,
                              std::vector<std::uint32_t> micro_batch_sizes, std::uint32_t batch_size,
                              std::uint64_t first_step, Route to_first, Route to_last) {
  return system.spawn(pipeline_behavior, std::move(stages), std::move(micro_batch_sizes), batch_size, first_step,
                      to_first, to_last);
}

} // namespace actorpipe::actors
