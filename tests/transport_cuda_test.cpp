/// transport_cuda: tensors on GPUs between ranks of the tensor transport, where this
/// machine has a GPU. The ranks are threads of one process, one per GPU present where
/// NCCL carries the tensors (it puts one rank on a GPU), two on one GPU where Gloo does.
/// Skipped (exit 77) where actorpipe was built without CUDA or no GPU is visible.

#define BOOST_TEST_MODULE transport_cuda
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include <boost/test/unit_test.hpp>

#include "test_support.hpp"
#include "transport_ranks.hpp"

#include "train/tensor_box.hpp"
#include "transport/tensor_transport.hpp"

#include <torch/torch.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <iostream>

using namespace actorpipe;
using namespace actorpipe::transport;
using test::each_rank;
using test::joined;

namespace {

torch::TensorOptions on_gpu(int index) { return torch::TensorOptions().device(torch::kCUDA, index); }

/// `tensor` as a payload its producer wrote on a stream of its own, with the event that
/// says so: as a stage hands on an activation.
train::Payload produced(torch::Tensor tensor) {
  const c10::Device device = tensor.device();
  auto event = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
  event->record(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device));
  return std::make_shared<const train::TensorBox>(train::TensorBox{std::move(tensor), std::nullopt, std::move(event)});
}

/// The payload's tensor on the host, once the work its event stands for is done.
torch::Tensor on_host(const train::Payload& payload) {
  if (payload->ready) payload->ready->synchronize();
  return payload->tensor.cpu();
}

} // namespace

BOOST_AUTO_TEST_CASE(ranks_on_gpus_of_their_own_send_through_nccl_in_order) {
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (gpus < 2) {
    BOOST_TEST_MESSAGE("one GPU: no two ranks on GPUs of their own to link (the next case shares it)");
    return;
  }
  // Rank 0 on cuda:0 sends to rank 1 on cuda:1, which answers back: both directions.
  auto ranks = joined(2);
  const std::vector<GpuLink> links{{7, 0, 1, 0, 1}, {8, 1, 0, 1, 0}};
  std::vector<std::size_t> opened(2);
  each_rank(2, [&](std::size_t r) {
    auto n = ranks[r]->open_gpu_links(links);
    REQUIRE_OK(n);
    opened[r] = *n;
  });
  BOOST_TEST(opened[0] == 2u);
  BOOST_TEST(opened[1] == 2u);
  // Ten in a row, taken in the order sent: NCCL matches a link's sends and receives in order.
  std::vector<TensorTicket> tickets;
  for (int i = 0; i < 10; ++i)
    tickets.push_back(ranks[0]->send(produced(torch::full({256, 3}, static_cast<float>(i), on_gpu(0))), 1, 7));
  for (int i = 0; i < 10; ++i) {
    BOOST_TEST(tickets[i].link == 7u);
    const train::Payload got = ranks[1]->receive(tickets[i]);
    BOOST_TEST(got->tensor.device() == c10::Device(c10::kCUDA, 1));
    BOOST_TEST(got->ready != nullptr); // ordered on the GPU, not waited for on the host
    BOOST_TEST(torch::equal(on_host(got), torch::full({256, 3}, static_cast<float>(i))));
  }
  const TensorTicket back = ranks[1]->send(produced(torch::arange(6, on_gpu(1).dtype(torch::kBFloat16))), 0, 8);
  BOOST_TEST(back.link == 8u);
  const train::Payload answer = ranks[0]->receive(back);
  BOOST_TEST((answer->tensor.scalar_type() == torch::kBFloat16));
  BOOST_TEST(torch::equal(on_host(answer), torch::arange(6, torch::kBFloat16)));
  for (auto& rank : ranks)
    rank->flush();
}

BOOST_AUTO_TEST_CASE(ranks_sharing_a_gpu_send_through_the_host) {
  // NCCL cannot put two ranks on one GPU: both ends see the same UUID and keep to Gloo.
  auto ranks = joined(2);
  const std::vector<GpuLink> links{{3, 0, 1, 0, 0}};
  each_rank(2, [&](std::size_t r) {
    auto n = ranks[r]->open_gpu_links(links);
    REQUIRE_OK(n);
    BOOST_TEST(*n == 0u);
  });
  const torch::Tensor sent = torch::randn({64, 8}, on_gpu(0));
  const TensorTicket ticket = ranks[0]->send(produced(sent), 1, 3);
  BOOST_TEST(ticket.link == 0u);
  const train::Payload got = ranks[1]->receive(ticket);
  BOOST_TEST(torch::equal(on_host(got), sent.cpu()));
}

BOOST_AUTO_TEST_CASE(a_group_of_ranks_on_gpus_of_their_own_sums_through_nccl) {
  // One rank per GPU present (one rank on a one-GPU machine), each summing its tensors
  // on its GPU.
  const int gpus = static_cast<int>(torch::cuda::device_count());
  const auto world = static_cast<std::size_t>(gpus);
  auto ranks = joined(world);
  std::vector<std::size_t> members(world);
  std::vector<int> cuda(world);
  for (std::size_t r = 0; r < world; ++r) {
    members[r] = r;
    cuda[r] = static_cast<int>(r);
  }
  std::vector<torch::Tensor> sums(world), lone(world);
  std::vector<bool> nccl(world);
  each_rank(world, [&](std::size_t r) {
    auto group = ranks[r]->group("gpus", members, cuda);
    nccl[r] = TensorTransport::uses_nccl(*group);
    const auto device = static_cast<int>(r);
    // Two tensors apart (through the group's flat buffer) and one alone.
    std::vector<train::Payload> tensors{train::wrap(torch::full({1000}, static_cast<float>(r + 1), on_gpu(device))),
                                        train::wrap(torch::full({7}, 2.0f, on_gpu(device)))};
    ranks[r]->all_reduce_sum(*group, tensors);
    sums[r] = tensors[0]->tensor.cpu();
    lone[r] = tensors[1]->tensor.cpu();
  });
  const float expected = static_cast<float>(world * (world + 1) / 2);
  for (std::size_t r = 0; r < world; ++r) {
    BOOST_TEST(nccl[r]);
    BOOST_TEST(torch::equal(sums[r], torch::full({1000}, expected)));
    BOOST_TEST(torch::equal(lone[r], torch::full({7}, 2.0f * static_cast<float>(world))));
  }
}

BOOST_AUTO_TEST_CASE(a_group_sharing_a_gpu_sums_through_gloo) {
  auto ranks = joined(2);
  std::vector<torch::Tensor> sums(2);
  std::vector<bool> nccl(2);
  each_rank(2, [&](std::size_t r) {
    auto group = ranks[r]->group("shared", {0, 1}, {0, 0});
    nccl[r] = TensorTransport::uses_nccl(*group);
    std::vector<train::Payload> tensors{train::wrap(torch::full({300}, static_cast<float>(r + 1), on_gpu(0)))};
    ranks[r]->all_reduce_sum(*group, tensors);
    sums[r] = tensors[0]->tensor.cpu();
  });
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST(!nccl[r]);
    BOOST_TEST(torch::equal(sums[r], torch::full({300}, 3.0f)));
  }
}

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::cout << "transport_cuda: skipped: LibTorch sees no CUDA device here\n";
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
