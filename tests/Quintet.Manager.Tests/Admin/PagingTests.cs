using Grpc.Core;
using Quintet.Manager.Admin;

namespace Quintet.Manager.Tests.Admin;

public class PagingTests
{
    [Theory]
    [InlineData("Bank.Account", "acct-1")]
    [InlineData("a:b", "1:2:3")]
    [InlineData("", "")]
    [InlineData("Ünïcode", "キー\n\0")]
    public void A_token_gives_back_the_parts_it_was_made_of(string className, string key)
    {
        var token = Paging.Token(className, key);

        Assert.Equal([className, key], Paging.Read(token, 2)!);
        Assert.DoesNotContain('/', token);
        Assert.DoesNotContain('+', token);
    }

    [Theory]
    [InlineData("not-a-token")]
    [InlineData("!!!")]
    [InlineData("cTE=")]
    public void A_token_this_api_did_not_make_is_invalid_argument(string token)
    {
        var refused = Assert.Throws<RpcException>(() => Paging.Read(token, 2));

        Assert.Equal(StatusCode.InvalidArgument, refused.StatusCode);
        Assert.Contains("ask again without it", refused.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public void A_token_with_another_count_of_parts_is_refused_and_an_empty_one_is_the_first_page()
    {
        Assert.Throws<RpcException>(() => Paging.Read(Paging.Token("one"), 2));
        Assert.Null(Paging.Read(string.Empty, 2));
    }

    [Theory]
    [InlineData(0, 100)]
    [InlineData(1, 1)]
    [InlineData(1000, 1000)]
    public void A_page_size_in_range_is_taken_and_zero_is_the_default(int requested, int expected) =>
        Assert.Equal(expected, Paging.Size(requested));

    [Theory]
    [InlineData(-1)]
    [InlineData(1001)]
    public void A_page_size_out_of_range_names_the_range(int requested)
    {
        var refused = Assert.Throws<RpcException>(() => Paging.Size(requested));

        Assert.Equal(StatusCode.InvalidArgument, refused.StatusCode);
        Assert.Contains("between 1 and 1000", refused.Status.Detail, StringComparison.Ordinal);
    }
}
