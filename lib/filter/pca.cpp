#include "lib/filter/pca.h"

#include <Eigen/Dense>
#include <algorithm>

#include "lib/common/error.h"

namespace dbs::filter {

std::vector<float> pca(const float* x, std::size_t n, std::size_t d, std::size_t k) {
  if (n == 0 || d == 0) throw ConfigError("pca: no points or no dimensions");
  k = std::min(k, d);
  using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Rows> X(x, static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  const Eigen::RowVectorXd mean = X.cast<double>().colwise().mean();
  // Covariance (d, d) in double from the float data in blocks, so no (n, d) double copy.
  Eigen::MatrixXd cov =
      Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  constexpr Eigen::Index kBlock = 4096;
  for (Eigen::Index b = 0; b < X.rows(); b += kBlock) {
    const Eigen::Index m = std::min(kBlock, X.rows() - b);
    const Eigen::MatrixXd c = X.middleRows(b, m).cast<double>().rowwise() - mean;
    cov.noalias() += c.transpose() * c;
  }
  cov /= static_cast<double>(std::max<std::size_t>(1, n - 1));
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(cov);
  if (es.info() != Eigen::Success) throw CheckError("pca: eigen decomposition failed");
  // Eigenvalues ascend: the top k axes are the last k columns, taken in reverse.
  Eigen::MatrixXd axes(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(k));
  for (std::size_t j = 0; j < k; ++j) {
    Eigen::VectorXd v = es.eigenvectors().col(static_cast<Eigen::Index>(d - 1 - j));
    Eigen::Index arg = 0;
    v.cwiseAbs().maxCoeff(&arg);
    if (v(arg) < 0) v = -v;
    axes.col(static_cast<Eigen::Index>(j)) = v;
  }
  std::vector<float> out(n * k);
  Eigen::Map<Rows> Y(out.data(), static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
  for (Eigen::Index b = 0; b < X.rows(); b += kBlock) {
    const Eigen::Index m = std::min(kBlock, X.rows() - b);
    Y.middleRows(b, m) =
        ((X.middleRows(b, m).cast<double>().rowwise() - mean) * axes).cast<float>();
  }
  return out;
}

}  // namespace dbs::filter
