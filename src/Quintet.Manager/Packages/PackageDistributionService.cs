using Grpc.Core;
using Quintet.Manager.Internal;

namespace Quintet.Manager.Packages;

/// <summary>Hands the zip of a package deployed here to a manager that is deploying it too (managers only).</summary>
internal sealed class PackageDistributionService(DeployedPackages deployed) : PackageDistribution.PackageDistributionBase
{
    public override async Task<GetPackageResponse> GetPackage(GetPackageRequest request, ServerCallContext context)
    {
        var package = deployed.All.FirstOrDefault(p => p.Name == request.Name)
            ?? throw new RpcException(new Status(StatusCode.NotFound, $"No package named '{request.Name}' is deployed on this manager."));
        var zip = PackageStore.ZipOf(package.Directory);
        if (!File.Exists(zip))
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"Package '{request.Name}' was deployed here from a folder; there is no zip to hand out."));
        }

        return new GetPackageResponse
        {
            PackageZip = Google.Protobuf.ByteString.CopyFrom(await File.ReadAllBytesAsync(zip, context.CancellationToken)),
            Sha256 = Google.Protobuf.ByteString.CopyFrom(package.Sha256),
        };
    }

    public override Task<ListDeployedResponse> ListDeployed(ListDeployedRequest request, ServerCallContext context)
    {
        var response = new ListDeployedResponse();
        response.Names.AddRange(deployed.All.Select(p => p.Name));
        return Task.FromResult(response);
    }
}
