using Grpc.Core;
using Microsoft.AspNetCore.Http;
using Quintet.Manager.Calls;
using Quintet.Protocol;

namespace Quintet.Manager.Tests.Calls;

public sealed class ClientCallIdTests
{
    [Fact]
    public void The_call_header_names_the_client_the_call_and_the_watermark()
    {
        var call = ClientCallId.Read(Headers(CallHeaders.FormatCall("0123456789abcdef0123456789abcdef", 42, 41)));

        Assert.Equal(new ClientCallId("0123456789abcdef0123456789abcdef", 42, 41), call);
    }

    [Fact]
    public void The_watermark_may_be_left_out_and_a_call_without_the_header_has_no_identity()
    {
        Assert.Equal(new ClientCallId("py-client_7", 3, 0), ClientCallId.Read(Headers("py-client_7:3")));
        Assert.Null(ClientCallId.Read(new HeaderDictionary()));
    }

    [Theory]
    [InlineData("", "client id")]
    [InlineData("client", "call's number")]
    [InlineData("client:", "call's number")]
    [InlineData("client:0", "call's number")]
    [InlineData("client:x", "call's number")]
    [InlineData("cl ient:1", "client id")]
    [InlineData("client:5:6", "watermark")]
    [InlineData("client:5:-1", "watermark")]
    [InlineData("client:5:1:2", "watermark")]
    public void A_malformed_call_header_is_refused_saying_which_part_is_wrong(string value, string part)
    {
        var refused = Assert.Throws<InvocationException>(() => ClientCallId.Read(Headers(value)));

        Assert.Equal(StatusCode.InvalidArgument, refused.Code);
        Assert.Contains(CallHeaders.Call, refused.Message, StringComparison.Ordinal);
        Assert.Contains(part, refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_client_id_longer_than_64_characters_is_refused()
    {
        var refused = Assert.Throws<InvocationException>(() => ClientCallId.Read(Headers(new string('a', 65) + ":1")));

        Assert.Contains("1 to 64", refused.Message, StringComparison.Ordinal);
    }

    private static HeaderDictionary Headers(string call) => new() { [CallHeaders.Call] = call };
}
