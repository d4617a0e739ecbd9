// A command-line driver for sdcMicro's recordSwap() C++ core (src/recordSwap/recordSwap.cpp,
// compiled beside this file by benchmarks/trs_peer.py from a snapshot of sdcMicro; not part
// of riskengine).  Reads the job from stdin, writes the swapped records to stdout.
//
// stdin:  n_rows n_cols hid n_hier h_1 .. h_n n_profiles (len v_1 .. v_len)* swaprate
//         k_anonymity n_risk_vars r_1 .. n_carry c_1 .. n_seeds seed_1 ..
//         then n_rows x n_cols integers (records ordered by household id)
// stdout: per seed, "seed S seconds T" and the n_rows x n_cols swapped records
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "recordSwap.h"

static std::vector<int> read_list() {
  int n;
  std::cin >> n;
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) std::cin >> v[i];
  return v;
}

int main() {
  int n_rows, n_cols, hid;
  std::cin >> n_rows >> n_cols >> hid;
  std::vector<int> hierarchy = read_list();
  int n_prof;
  std::cin >> n_prof;
  std::vector<std::vector<int>> similar(n_prof);
  for (int p = 0; p < n_prof; ++p) similar[p] = read_list();
  double swaprate;
  int k;
  std::cin >> swaprate >> k;
  std::vector<int> risk_vars = read_list();
  std::vector<int> carry = read_list();
  std::vector<int> seeds = read_list();
  std::vector<std::vector<int>> data(n_rows, std::vector<int>(n_cols));
  for (int i = 0; i < n_rows; ++i)
    for (int j = 0; j < n_cols; ++j) std::cin >> data[i][j];
  for (int seed : seeds) {
    int swapped_records = 0, swapped_hid = 0;
    std::vector<std::vector<double>> risk;  // empty: counts of the risk variables
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<int>> out =
        recordSwap(data, hid, hierarchy, similar, swaprate, risk, 0.0, k, risk_vars, carry,
                   swapped_records, swapped_hid, "/dev/null", seed);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("seed %d seconds %.6f\n", seed, sec);
    for (const auto &row : out) {
      for (size_t j = 0; j < row.size(); ++j) std::printf(j ? " %d" : "%d", row[j]);
      std::printf("\n");
    }
  }
  return 0;
}
