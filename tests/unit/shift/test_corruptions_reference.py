"""Each corruption against the reference: hendrycks/robustness ``ImageNet-C/create_c/make_cifar_c.py``.

The golden values were computed by running that file's corruption functions (commit
8190fe329f5f072a06e3a2aea02bb5dda69aed9f) image by image, as its main loop does, on the images of
:func:`cifar_like` (their digest is checked first), with Python 3.11.7, NumPy 2.4.6, SciPy 1.17.1,
Pillow 13.0.0, scikit-image 0.26.0, opencv-python-headless 4.10.0.84 and Wand 0.7.2 over
ImageMagick 6.9.11-60 Q16 (Debian 12's libmagickwand-6.q16-6). Only what NumPy 2 and
scikit-image 0.26 no longer accept was adapted: ``np.float_`` read as ``np.float64``,
``np.fromstring`` as ``np.frombuffer``, ``multichannel=True`` as ``channel_axis=-1``, and
``skimage.util.random_noise`` given a seeded ``rng`` (it draws from its own Generator otherwise).
Before each corruption and severity the global ``np.random`` was seeded with 100 + severity; for
impulse_noise, ``random_noise`` got ``np.random.default_rng(100 + severity)``.

Matched exactly (the sha256 of the uint8 output): all fourteen computable corruptions, at every
severity, with the same draws: a ``RandomState(100 + severity)`` (impulse_noise: a ``Generator``)
passed as ``rng`` reproduces the reference's seeded global state, because the draws are made in its
order. elastic_transform's golden values are OpenCV 4.10's: OpenCV 4.11 and later interpolate
``warpAffine`` at the exact position rather than in 1/32-pixel steps, which moves 10–15 % of the
values of CIFAR-10's test images by 1 to 3 levels.

The same holds on real images: the first 200 of CIFAR-10's test split in the shared folder (skipped
where the folder is absent).

Matched by distribution: each random corruption driven by a ``numpy.random.Generator`` (the usage the
project documents), against the reference's mean per-pixel change and mean absolute change over 64
images, within five combined standard errors of the reference's per-image means.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from trustcal.shift import SEVERITIES, corrupt

INPUT_SHA256 = "0e55af7b2f5306a6eec6c69ab05a43e80ef1637ee45c090029c8bcac31c4f41d"

# sha256 of make_cifar_c.py's output (uint8, N x 32 x 32 x 3) on cifar_like(8), per "corruption/severity"
GOLDEN = {
    "gaussian_noise/1": "61bb5cf595a4071d992877cde50970410257f00195e01394d635f26f5338faf0",
    "gaussian_noise/2": "babe25daada12bd2a6be922e1303d1c6d237d65400517d8442204472e47ccbc4",
    "gaussian_noise/3": "704c45949d0ff6af8d4c6fc7154fb7d6c1690cdc0165b9725f782411a15390ce",
    "gaussian_noise/4": "ec6c805fd919dce5cd788f164de7d8f944e24a63ddf3216f91356a7e9bcb7807",
    "gaussian_noise/5": "0a63c22586585e1a4cc05f6a1ffa2bf635238bd1bee0170dd03814149597425f",
    "shot_noise/1": "e55566f1fc1cb56823d9de26fa81f5dba18448f85caf1c40be6a11ecd48f9a43",
    "shot_noise/2": "66dd23ea5bba95d0d83c3bd907d0a5971041e5fc6a2517d5c4e021f357623737",
    "shot_noise/3": "c06a643418c1a49eff78976cecc16d6217d8c4e041759c7b407591292eb0c655",
    "shot_noise/4": "0aff71a99bf70ef2453f47232f54effde6d61b55ded26237ef2bd39360932f75",
    "shot_noise/5": "d1d2d3d82f3ddec198d3b898a0d9f3072511cf853a3279fbf7fe6d1ce56e7b77",
    "impulse_noise/1": "7f4ca96bafc4b3e7934ba3c167bfec40f6b7d3e98277311ddce9da3e3a7f861d",
    "impulse_noise/2": "84eceb04fc9e27d09600bb1947fabf111ff9885dacf92ab6873274ebf1f5b236",
    "impulse_noise/3": "e57cec7e62fff4fdfe23ce2bb1863cdeba7ecba96d231992734acf04284e1698",
    "impulse_noise/4": "2e92c81b928e6abca6294c8595a31c780d50c435f96aa2a3ef57386865c12757",
    "impulse_noise/5": "941200b1d8189d598da028ed14dc7947fa1ebd17ca2c45d908caa9db0bd787f1",
    "defocus_blur/1": "b0b85974ba0b850ee20140b4474a84569ba2b61c962e0eea1b09e720ed00e533",
    "defocus_blur/2": "a8673b3d4e84952a5685ceb52571e57edcac75c3e3d2d7ad4ab731fe5fadc542",
    "defocus_blur/3": "f57f4e197832fec3ca47902867489a7d189930be929d24597d7c9be39e904ec7",
    "defocus_blur/4": "e64464b58853d07c423511d7527adb32f222158793e798a112c21c33eb37e98e",
    "defocus_blur/5": "d124b5654f342185652de9e2d06c8383346caf89f1e8e7062ca9d54801dff2b7",
    "glass_blur/1": "838cd6932acfbe6e1878206d33ef64c849b88c34dfa9ca74a0cdc382025a638d",
    "glass_blur/2": "77a7e1ac8f3d816d65d85750096eb0b778267fdcbef04882d4e0bb5dc421c9f1",
    "glass_blur/3": "714275276af344baaff6021ce0bc591fd42cdc8c8600c42959eb3a82f4ad2b6a",
    "glass_blur/4": "0ad0dbe64bd6fd207d7b00bcfb7ffb99a90d582bd0fc646704190cc2e6bd044b",
    "glass_blur/5": "01d252c5b0519b69591ac57c862da8a2dfe497919175da4b7f03108d92330ab4",
    "motion_blur/1": "1e46d8924cbb467155b00489e77a99efc43292f932a1e3c3c9ec6dddbc5a0db0",
    "motion_blur/2": "d865db319d6318ca3d78b9e879ddc25aa0aeed14ffa7b94dab5b1b2224032d9e",
    "motion_blur/3": "e2ec534c4d69424b04d9af9336d380f49e4b28718a4da1f663d803f844d6640e",
    "motion_blur/4": "8f5d35e4e51fc6dbac6a69b053d58b0a81879ae3a8a6c33553ca0a965a763b07",
    "motion_blur/5": "a72dbca0523a04d9376ab4d983624146dc50c05d4ef1a7364e7f739ea427c6f9",
    "zoom_blur/1": "90bb29d209bb7cf0572292cbba3ddcb604e95d822a1e9e38fe88f367517c1525",
    "zoom_blur/2": "13f214556d370cfb933b66b129a91c138e3557a77b4ba13f40c0a4227c9dd473",
    "zoom_blur/3": "c2381e8208928b3a4760a509273a67638b0e38a49f7681959a96dfcac4567d31",
    "zoom_blur/4": "836f630b89c914d38b9b34e01937fd60f1e19942d0a8b063cce54b8b05fdaf88",
    "zoom_blur/5": "d5d794075ea289669d0010c48ba8f7202f628d313c5a25dd485621f9fa6dc14a",
    "snow/1": "4b49f062bf0cf9d64c7d50061b60dd05d2fa15779832bf13038ae79d77596e2e",
    "snow/2": "cacb4388b1afd6bdd0e6a24b7527080edd8737a527e36d1995140f6c9b5c0f67",
    "snow/3": "33323ec36976ec0b26a46c7fbe0270fb0b9f54e985f984094484a71ee7db92bf",
    "snow/4": "06c08288f95095e7b5ebc54ebf6b1d81d97c603ff9bb83732b0a16cfcaa5c73c",
    "snow/5": "e00c2943c15a1222c72d450d046ddc2980dad56a42dd011eb3284687e2db0c0d",
    "fog/1": "e0de81e3f412544276cf73438ebaadc2bb390769fec047a02a71ba79e1ff7cbc",
    "fog/2": "7388e80b2adf1f93e4c14ac3d0d2b9f95bf3752880fef945fa2bf370bfbc89a9",
    "fog/3": "afb2fa6225f28d4e1f5a5ef17d8649502e4b626d68bf6553ce4db345b8611c5d",
    "fog/4": "98d25436d1fb5646a8825e77b14985cc76982b48af274f1f201c0fdd247cf53f",
    "fog/5": "a2bb863c3cc6f08defc8c7987a573f454a06739ef345b88c754f48f540912a40",
    "brightness/1": "16669d40aafbcaa0245cae4b4965548265221505cfd20511d4cf02602c35b529",
    "brightness/2": "ba206a298fda66dd1b4cd455059a57ed9fcc1e8010823f07e7850c9dc80096db",
    "brightness/3": "f842eda9480f1443f71614c0c8956d88dabac7788197d382f31f01e318a1ca0a",
    "brightness/4": "d5109adf8c4efa80b0d3bf0a0864bcd25404662b2e60e1e6ea23819d31d957ca",
    "brightness/5": "c084d57d364a41958d236103525a388baf802721b1b083ad31b7412db4866b5d",
    "contrast/1": "14ef2485e445341f9fd0f4145a266a10871f2692ab61c61b883a895ea7c09d07",
    "contrast/2": "f909cf1a16ffe5ca9b9551d2788018824e67a7f31588ade39a7d95f0b2f8c1ba",
    "contrast/3": "509b93992a6e2c931c8754bbe2ca4a1145c148246ba5f00f806795740f194277",
    "contrast/4": "c06a1d11b4ea7d3b26285fa7672b8a9396c17da00c516e5779da930adc81f367",
    "contrast/5": "f495e5e7350b8137e13663146169fc3c7c9d3392ac16f5c4e6457a73e001e106",
    "elastic_transform/1": "4c0c8b155b68bbd2d7767c2c1e0929b68491add19b4c4b8089951fa9feb08d56",
    "elastic_transform/2": "5d46962be4cb3906ea1cdaa9d06c0e10550e54231d8d040d717d2900854214b9",
    "elastic_transform/3": "102e67e60a05ebbec018e97606a6963bd3279adb2b58a43c727eddcdc5b112fd",
    "elastic_transform/4": "75f8d5fea7167620a048a36a438f090613e930cb95cb332f27b4f3655347035f",
    "elastic_transform/5": "6294f86476db776db957def4849fc59db612c2dac00025545d165e2ba4a97cd8",
    "pixelate/1": "d6295b29122389027decd682cb0c78a6f717f963e0fdcbea9476766439a9eff2",
    "pixelate/2": "76e09f9acb3678f728282cf2629e579a748f5514420ee879e2bb9d4ece1a09ee",
    "pixelate/3": "b97999352f13f2f7c10f42a736c550ca2639d2bfc8542d854a63484c6438a4cf",
    "pixelate/4": "a43894347c0f428b63fc31b92cf92874158433ea8afd305e1bd38ac6379dc4e6",
    "pixelate/5": "f52595442b8dbf5a43e8522e0964525dded208fc28f615d2eb673b97d0a4004b",
    "jpeg_compression/1": "301a7eb2cfea99c66d90310aed77d75dc5f5b3da8140ed65c54769d14f1b3260",
    "jpeg_compression/2": "44944a6fd368c5f49f3445017970087e5d6fdea6597c4ea230e85e2b0f1932d0",
    "jpeg_compression/3": "4adfa786cadd2b5bdb551a222530967bc06b9004d9683f80ba536b4813d95ce2",
    "jpeg_compression/4": "20e35ac84986c03b1188c541db36b997adc7d248988bf0adc55a438433baa94c",
    "jpeg_compression/5": "c25171e8d38337b1b990db8d4d73c6112a7af4562b065b5012eecba6432ebbd3",
}

# From make_cifar_c.py's output on cifar_like(64), the draws seeded as above: per severity, (mean change,
# its standard error over the 64 images, mean absolute change, its standard error), in levels of 0-255.
DISTRIBUTION = {
    "gaussian_noise": [
        (-0.4189, 0.0241, 7.4935, 0.0775),
        (-0.4424, 0.0423, 11.0483, 0.1247),
        (-0.3347, 0.0558, 14.6405, 0.1643),
        (-0.2190, 0.0648, 16.3788, 0.1826),
        (-0.3360, 0.0763, 17.9916, 0.2019),
    ],
    "shot_noise": [
        (-0.8017, 0.0357, 5.6709, 0.0982),
        (-1.0407, 0.0550, 7.9214, 0.1396),
        (-1.4301, 0.0839, 12.3595, 0.2214),
        (-1.6319, 0.1021, 14.0996, 0.2546),
        (-2.1619, 0.1363, 17.1479, 0.3145),
    ],
    "impulse_noise": [
        (-0.0037, 0.0362, 1.3027, 0.0360),
        (-0.0580, 0.0638, 2.5005, 0.0450),
        (-0.0691, 0.0696, 3.7537, 0.0576),
        (-0.0997, 0.1199, 6.5423, 0.0728),
        (-0.0459, 0.1450, 8.9582, 0.0864),
    ],
    "glass_blur": [
        (-0.8832, 0.1430, 30.4753, 3.0118),
        (-1.6266, 0.1376, 30.6740, 2.9929),
        (-1.7361, 0.1386, 30.4628, 2.9164),
        (-2.4345, 0.2608, 45.3803, 4.4473),
        (-2.4835, 0.2643, 42.9099, 4.1352),
    ],
    "motion_blur": [
        (0.0427, 0.0898, 17.9808, 1.8777),
        (0.4142, 0.1534, 24.5736, 2.2923),
        (0.6913, 0.2054, 29.6944, 2.6792),
        (0.6254, 0.2151, 29.9785, 2.6667),
        (1.0014, 0.2525, 32.8618, 2.9157),
    ],
    "snow": [
        (10.2788, 0.1730, 10.2798, 0.1730),
        (22.7189, 0.3342, 22.7217, 0.3342),
        (24.3183, 0.4044, 24.3207, 0.4044),
        (35.7935, 0.6395, 35.7935, 0.6395),
        (50.2622, 1.1983, 50.2622, 1.1983),
    ],
    "fog": [
        (-0.5914, 0.5706, 12.6522, 0.3076),
        (-1.0702, 1.0829, 24.8488, 0.6081),
        (-2.1532, 1.3474, 32.2613, 0.7532),
        (-2.0483, 1.6452, 38.2357, 0.8169),
        (-3.6310, 1.7907, 45.8082, 1.0589),
    ],
    "elastic_transform": [
        (-0.4701, 0.4730, 46.5942, 4.2929),
        (-0.2673, 0.2753, 43.0494, 4.1252),
        (-1.0515, 0.4072, 40.0291, 3.7364),
        (-0.8746, 0.2938, 38.2902, 3.5930),
        (-0.3927, 0.2242, 32.9001, 3.1826),
    ],
}


# The first 200 images of CIFAR-10's test split in the shared folder (datasets/cifar10-jpeg/cifar10-jpg.tar.gz,
# test/<class>/NNNN.jpg in file-name order, decoded by Pillow to RGB), and the sha256 of make_cifar_c.py's
# output on them, computed as above (the reference run on the first 1,000 images; its draws for the first
# 200 come first).
CIFAR10_INPUT_SHA256 = "8ebd80f5fe9a3c48293864f0287ea2929c0a56b39deed76ab9dd90cb98b7a666"
CIFAR10_GOLDEN = {
    "gaussian_noise/1": "7278e3ce5adc6533a65760ab9e06b33a5d3723695b3e995ce66b81ebad1a8330",
    "gaussian_noise/2": "f60558998e98549b7e40fef1508cb5e091c77fad77f80f53a410de353033d3cb",
    "gaussian_noise/3": "581becfe238d008f5a257996bde6084653289ba0a270f9393326c0adba4d208c",
    "gaussian_noise/4": "4e7c971b994b8d386b081f30c71c0fbe0e6eb40b841fea9238c15a91ac3c4fdf",
    "gaussian_noise/5": "3af1928db3a29199dd71b6c7aa6c148a43defaa4aa417588e02e7c3fffaafba4",
    "shot_noise/1": "2e8a4cabd516a0d89804f3ab519961d477927f925247c4c040a0296c94de2b36",
    "shot_noise/2": "6deb1e57ed8f58a9d11f53dc678cee71aec9122ceef1025e70c05d42408c769e",
    "shot_noise/3": "cd8e107a53437101adf97448b5caa8c46283564e35c6fcd64ef8ec6955767580",
    "shot_noise/4": "962635b4f6a982bf7a39e5754c46dc7aa3139a910c4ed52031ff3e1798e8b81b",
    "shot_noise/5": "acf0e07c41f48d90ba6b1cbf0d06cbe4b264e57eaae5a930f6ab1e74c063f9ad",
    "impulse_noise/1": "7993afab795456e574b7517ff25a6ace3bcb501543e4fdad6fed7c285f433250",
    "impulse_noise/2": "558c6bdb471b1c83913149b33f00aed927487ffeea8ede987edd85462e9de487",
    "impulse_noise/3": "ae777126c10274469d70f0e3581b9a2f37b482471ff67e694cec8df4ed644acc",
    "impulse_noise/4": "e6218b3277aba27c8d6454f81862a5e9b7f8d307f8e87c0ead02c8cca6381fa7",
    "impulse_noise/5": "b312f3c8208e71a1f5337190fb1077110f66aa2076ebfb43aacb04b232684b9f",
    "defocus_blur/1": "1628b82433948751ecb8d306962dced6363a7e9e286528617ff0da7587176ce6",
    "defocus_blur/2": "9ed6396a9994f33b148c1d7ed506b301a9f082a1545cdb705eea06a5fd20ed77",
    "defocus_blur/3": "020fcd228a53858fc1d403bee8abb5f9412938e1924ce8dbfe29de7e1b68e150",
    "defocus_blur/4": "77ef7cabfa1568921709b2c69e9124a708e9f926dfdec4dfa98e2dfe8ae15143",
    "defocus_blur/5": "86f36c3751e09d27dbae5d10a91cbaa5fd4d82b8e228710e8b3fab20bc32d33a",
    "glass_blur/1": "be3717a22865893d35e30c9deb3f2b7c7e56c26fe6acc0ff4dfec5a4d45916f5",
    "glass_blur/2": "2ed770d50c243039242846dda11ac1b602246c3540ae68ed30f3dd5629c0de28",
    "glass_blur/3": "71fb884f76b3f84b67a3d76c541f921c5adb1dc2d076a089ee1be05befd49170",
    "glass_blur/4": "b1664f0a70091babc9e2367a75a8169961943048cd0e9d56b57951101178d43a",
    "glass_blur/5": "012977853af8497786c8ad247221ccd2dc01231bd108ae9beede7e9bb3b73b0e",
    "motion_blur/1": "37abc6680969dc64438e68d22b9604e2e131eab3d9ae1f43c3d288b5c5177a36",
    "motion_blur/2": "ac455e505999d38fa7b12c3cd577c5da76cb05edc9fb31f21cd6946b7f9d7c54",
    "motion_blur/3": "afa9e6b1970c829b5f896c53efd4226d586947b69d6812f456ca4014815552e9",
    "motion_blur/4": "f7a3038a2650c4ab75c2aa47b9bdebd98a3f749a8f05418296e436986f315f6c",
    "motion_blur/5": "f9dbcda5a71747a6a4186cd852e740490170ecdc434489470cdf20779bbdfe90",
    "zoom_blur/1": "c8a0e5cd28d32397ec4b46ce56cfc1429b3720777dad82b2a8191d7f61474b80",
    "zoom_blur/2": "1c7878719ad565da7e061947b09f8ae33fa59846f5eef13e631e3ac99dc31edc",
    "zoom_blur/3": "14be4ad7e5487d70e730aeabc7cc8d608c0df0ccd554b2a9a79e2edfc7a576f9",
    "zoom_blur/4": "94c0f24f5e1e41ecec9198c6f888635d5f1f9af8cda3ed15a58bfbb9a7c5c2b8",
    "zoom_blur/5": "edf6d7a135176f9f6957dfd798a225a21d22a25c563d8f5543568d4792a2acfc",
    "snow/1": "86eb3885d351c3f4efe9bcf43766e4d824314d3e1cf98afb235323684e604a4d",
    "snow/2": "d6c67483ce94712d5b48fdf567c1b151134a2e8e3afdf8e850389075433ad4fe",
    "snow/3": "9e1cc87ad59530c1edf761fa719d2e4146c4d0cfacaa91a30a99b03a384e547b",
    "snow/4": "04e2e2e6a5cc7a0d22098fbd92c2685cb9b7217c7761db411fc7da04142e889b",
    "snow/5": "93e3e3eefd89318d53731689f038d87ef668abc71152ea1b6720dd31182a1a87",
    "fog/1": "d18b669e3b41a06244e6ed874e65bea599358b53c63f6067be9119eab14fe554",
    "fog/2": "316210e9060dde77a31ebf2aef4ece17c0d951ff6ee72725c77debc9193f8a66",
    "fog/3": "a7c939da7f1970a074d9c90d7015530061083e8f8ed3987abbf8f7576d0def2e",
    "fog/4": "1f22962f00e1d1c42e8f37d9e6af3ee66fb64cc1c8b29deeaa112bec08a1be07",
    "fog/5": "868034b24c6134325a84cda19819b8830052546fed19f0bc91e218e60a85bdde",
    "brightness/1": "bd6a8f575e27f66e4e655de7ea963a37795cd8d1391ce46c682f56d5279c1cb5",
    "brightness/2": "bb4d0395c67101057ea6d608bca06b45853a3dd8b1f01f2f6462c8b7389dd094",
    "brightness/3": "cbe416a543aefb1af3930d9270f407cbb970ccc998b162f66c25360fbdefa5d1",
    "brightness/4": "1db90bb0649c43fe54b11f4c82c2dcd7e35a68925df73866a70b1b51fc4c2a24",
    "brightness/5": "6b4cd985cdce4b8faa1bd06a27250d6ece2e431a604fef23d48dd335f8e835e2",
    "contrast/1": "a99dedb52d3a167702b7390a49c64fc6ca9c49618990b424f924d2cf831df857",
    "contrast/2": "33c2f10411b91c65e0832438de53dac9bc6e604214ebbfa5d501f1db04cb55e0",
    "contrast/3": "0e6e99fafa9afd94620881aaff80d6def1ad9863e7ba41d9cbd4169c7d0beb84",
    "contrast/4": "f827afa0287b0cfe2b5a720f9f3ca80a0a2c70e4e3a944fb2a04b6c6c61136dd",
    "contrast/5": "ce827d31ee2450c29d95b8412d02932aa871abbdbd9f24658938803cc8801736",
    "elastic_transform/1": "18300706d085137aabcf290f079e57b233a28f802697d72cdf8b9e98376c2f35",
    "elastic_transform/2": "fdb59a1eabe9d0f3a762258f2c057d3d7c139f11e4dcf2ce7a693c9135f74043",
    "elastic_transform/3": "514bc4e7a5c345e039ee593d730409ae6920b7863a2bcf0804f75dd12ecea830",
    "elastic_transform/4": "dbcb41da283ae958d462c3671f1955af791ee951f5a0dfb8efd6c772b9704ab4",
    "elastic_transform/5": "28592758b19c1dc976442bf51f96f48a22e664e90a4546f486bb2ea0e96e7afa",
    "pixelate/1": "164ca5205a987f7fa7727da4f8290a3741160a6f71422b942fbb920b32443fe2",
    "pixelate/2": "c8e990285ea2eb364ae8c83e7ae8c32d0ded0d96046607c42392d9560fc49aaf",
    "pixelate/3": "e005db5e28350421eb8f8061dfb153acbe8d895011a63385b7b8beee2d6adf64",
    "pixelate/4": "254d3cb9a7e28bd0b123bdc549ce903971f4413d8cdbb8baf8656b6311fa4314",
    "pixelate/5": "27f8b0123d0970aa3842b21025e4e84efcb349e2bf2d6a44cd46c918d2859b8c",
    "jpeg_compression/1": "6ce05479a3e743cc2afad9785a152fb4a7adc5bc8e7a7a93691dade2b36f39a2",
    "jpeg_compression/2": "06a559a355da383ed66968b69b9fbc578366364df6bdb190d2d5aac6251c3c21",
    "jpeg_compression/3": "9d1ab2a60eac31753b7e1c3285109f955e9c63df307fafb198e99937c3096c8f",
    "jpeg_compression/4": "c281f8a29b58e009bdaf99192b99052b9cdbf732e10f02093fd17a610253cc7f",
    "jpeg_compression/5": "b75427faf3cd0bf4e0b571e98591211a2d6fe1eefda4a8b28cc906b24f020126",
}


def cifar_like(n: int, seed: int = 20240611) -> np.ndarray:
    """``n`` CIFAR-like uint8 images (N, 32, 32, 3), in turn: smooth colour gradients with mild noise; flat
    patches (grey, black, white, saturated primaries) beside a noisy block; sinusoidal texture; uniform
    noise. Flat and saturated regions exercise the ties and boundaries of the colour conversions and
    the truncation to uint8."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:32, 0:32] / 31.0
    out = np.empty((n, 32, 32, 3), dtype=np.uint8)
    for i in range(n):
        kind = i % 4
        if kind == 0:
            base = rng.random(3)[:, None, None] * xx + rng.random(3)[:, None, None] * yy + rng.random(3)[:, None, None]
            img = base / base.max() * 255 + rng.normal(0, 6, (3, 32, 32))
        elif kind == 1:
            img = np.empty((3, 32, 32))
            img[:] = rng.integers(0, 256, 3)[:, None, None]
            img[:, :16, :16] = 128
            img[:, 16:, :8] = 0
            img[:, 16:, 8:16] = 255
            img[0, :8, 16:], img[1:, :8, 16:] = 255, 0
            img[:, 24:, 24:] = rng.integers(0, 256, (3, 8, 8))
        elif kind == 2:
            f = rng.uniform(1, 6, 3)
            img = 127.5 + 127.5 * np.sin(2 * np.pi * (f[:, None, None] * xx + f[::-1, None, None] * yy))
        else:
            img = rng.integers(0, 256, (3, 32, 32)).astype(float)
        out[i] = np.clip(np.rint(img), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    return out


def reference_rng(name: str, severity: int):
    """The draws the golden values were made with: the reference's global state seeded with 100 + severity
    (impulse_noise: scikit-image's Generator so seeded)."""
    if name == "impulse_noise":
        return np.random.default_rng(100 + severity)
    return np.random.RandomState(100 + severity)


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def images8():
    images = cifar_like(8)
    assert sha256(images) == INPUT_SHA256  # the images the golden values were computed on
    return images


@pytest.fixture(scope="module")
def images64():
    return cifar_like(64)


NAMES = list(dict.fromkeys(key.split("/")[0] for key in GOLDEN))


def test_golden_values_cover_every_computable_corruption():
    from trustcal.shift import available

    assert sorted(NAMES) == sorted(available())
    assert set(DISTRIBUTION) <= set(NAMES)


@pytest.mark.parametrize("severity", SEVERITIES)
@pytest.mark.parametrize("name", NAMES)
def test_equal_to_reference(images8, name, severity):
    out = corrupt(name, images8, severity, reference_rng(name, severity), layout="NHWC")
    assert out.dtype == np.uint8 and out.shape == images8.shape
    assert sha256(out) == GOLDEN[f"{name}/{severity}"]


@pytest.mark.parametrize("name", ["gaussian_noise", "fog", "brightness"])
def test_equal_to_reference_in_the_projects_layout(images8, name):
    """NCHW in, NCHW out: the same images as the reference's, transposed."""
    out = corrupt(name, images8.transpose(0, 3, 1, 2), 3, reference_rng(name, 3))
    assert out.shape == (8, 3, 32, 32)
    assert sha256(out.transpose(0, 2, 3, 1)) == GOLDEN[f"{name}/3"]


@pytest.mark.parametrize("name", list(DISTRIBUTION))
def test_distribution_with_a_generator(images64, name):
    """Driven by a numpy Generator (other draws than the reference's), the per-pixel change has the
    reference's mean and mean absolute value at every severity."""
    before = images64.astype(np.int64)
    for severity, (mean, mean_se, mean_abs, mean_abs_se) in zip(SEVERITIES, DISTRIBUTION[name]):
        out = corrupt(name, images64, severity, np.random.default_rng(7 + severity), layout="NHWC")
        change = out.astype(np.int64) - before
        assert abs(change.mean() - mean) <= 5 * np.sqrt(2) * mean_se + 1e-3, (severity, change.mean(), mean)
        assert abs(np.abs(change).mean() - mean_abs) <= 5 * np.sqrt(2) * mean_abs_se + 1e-3, (severity, mean_abs)


@pytest.fixture(scope="module")
def cifar10_test200(shared):
    import io
    import tarfile

    from PIL import Image

    found = []
    with tarfile.open(shared("datasets/cifar10-jpeg/cifar10-jpg.tar.gz")) as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 3 and parts[0] == "test":
                found.append((member.name, tar.extractfile(member).read()))
    found.sort()
    images = np.stack([np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), np.uint8) for _, data in found[:200]])
    assert sha256(images) == CIFAR10_INPUT_SHA256
    return images


@pytest.mark.parametrize("name", NAMES)
def test_equal_to_reference_on_cifar10(cifar10_test200, name):
    """Real images, every severity: the same uint8 images as the reference's, to the bit."""
    for severity in SEVERITIES:
        out = corrupt(name, cifar10_test200, severity, reference_rng(name, severity), layout="NHWC")
        assert sha256(out) == CIFAR10_GOLDEN[f"{name}/{severity}"], severity
